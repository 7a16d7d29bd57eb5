#!/usr/bin/env python3
"""Train a character-level language model on this repository's own text (its Markdown, Python,
C++ and CUDA files, CORPUS below): embedding -> lltm_jit.LLTMSequence (stacked layers) -> a linear map to the
characters. It prints the validation loss and a sample of generated text as it learns, saves a
checkpoint at each evaluation, and ends with a plot of the loss curves and a summary line.

  python examples/char_lm.py                                  # CPU
  python examples/char_lm.py --device cuda --amp --compile    # one GPU, bf16 autocast, compiled
  torchrun --nproc_per_node 2 examples/char_lm.py --device cuda --batch 32   # DDP, 2 x 32 = 64
  python examples/char_lm.py --steps 2000 --resume            # continue from --out's checkpoint

Output goes to --out (runs/char_lm, which git ignores, from the checkout's root).

Each file's first 90% is training text, its last 10% validation text. An epoch is one pass over
the training text in windows of --seq-len characters (a random offset and order each epoch).
--batch is per process: N ranks with --batch b see the same windows in the same order as one
process with --batch N*b, so their runs differ only by rounding (and by dropout's draws).
With the same arguments, stopping after k steps and resuming reproduces an uninterrupted run's
parameters bit for bit on the CPU. A resumed run takes its own --lr, --weight-decay and --amp
(saying what changed); the model's sizes, --seq-len, the global batch, --seed and the corpus's
characters must be the checkpoint's.
"""

import argparse
import hashlib
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.nn  # noqa: F401  before init_process_group: see main()'s teardown
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

import lltm_jit

REPO = Path(__file__).resolve().parent.parent
CORPUS = ("README.md", "docs/*.md", "benchmarks/*.md", "examples/*.md", "bench.py", "benchmarks/*.py", "examples/*.py",
          "lltm_jit/*.py", "src/*.h", "src/*.cpp", "src/*.cuh", "src/*.cu", "tests/*.py")
VAL_FRACTION = 0.1
VAL_BATCH = 128  # windows per validation forward pass, on each rank
# A checkpoint made with other values of these would give another model or another data order.
RESUME_MUST_MATCH = ("embed", "state", "layers", "seq_len", "global_batch", "seed")


class Corpus:
    """The repository's text as character ids: ``train`` and ``val`` (1-D int64), ``chars``."""

    def __init__(self, root: Path = REPO):
        texts = [path.read_text(encoding="utf-8") for pattern in CORPUS for path in sorted(root.glob(pattern))]
        self.chars = sorted(set("".join(texts)))
        self.sha256 = hashlib.sha256("\0".join(texts).encode()).hexdigest()  # what a resumed run must find again
        index = {c: i for i, c in enumerate(self.chars)}
        cuts = [round(len(t) * (1 - VAL_FRACTION)) for t in texts]
        encode = lambda s: torch.tensor([index[c] for c in s], dtype=torch.int64)  # noqa: E731
        self.train = encode("".join(t[:cut] for t, cut in zip(texts, cuts)))
        self.val = encode("".join(t[cut:] for t, cut in zip(texts, cuts)))

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


class Batches:
    """Training windows of seq_len + 1 characters, global_batch per step, for step s of any run.

    Each epoch draws a random offset and a random order of the windows from (seed, epoch) alone,
    so any step's batch is known without replaying the ones before it: a resumed run and a run on
    any number of ranks see the same windows. Rank r of `world` takes its slice of the batch.
    """

    def __init__(self, text, seq_len: int, global_batch: int, seed: int, rank: int, world: int):
        self.text, self.seq_len, self.seed = text, seq_len, seed
        self.windows = (len(text) - 1) // seq_len - 1  # room for any offset below seq_len
        self.steps_per_epoch = max(self.windows, 0) // global_batch
        if self.steps_per_epoch == 0:
            raise SystemExit(f"char_lm: a global batch of {global_batch} windows of {seq_len} characters "
                             f"needs more than the {len(text)} training characters")
        self.global_batch, self.local = global_batch, slice(rank * global_batch // world,
                                                            (rank + 1) * global_batch // world)
        self._epoch, self._order = None, None

    def __call__(self, step: int):
        """(input, target), each (batch, seq_len) on the text's device, for 0-based `step`."""
        epoch, index = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            offset = torch.randint(self.seq_len, (), generator=generator)
            self._order = offset + self.seq_len * torch.randperm(self.windows, generator=generator)
            self._epoch = epoch
        starts = self._order[index * self.global_batch:(index + 1) * self.global_batch][self.local]
        chunk = self.text[starts.to(self.text.device)[:, None] + torch.arange(self.seq_len + 1, device=self.text.device)]
        return chunk[:, :-1], chunk[:, 1:]


class CharLM(nn.Module):
    """forward(ids (batch, time), state=None) -> logits (batch, time, vocab), state."""

    def __init__(self, vocab: int, embed: int, state: int, layers: int, dropout: float, device=None):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed, device=device)
        # Its dropout acts between layers only (nn.LSTM warns of it for one layer); self.dropout
        # acts on the last layer's output.
        self.rnn = lltm_jit.LLTMSequence(embed, state, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0,
                                         device=device)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(state, vocab, device=device)

    def forward(self, ids, state=None):
        output, state = self.rnn(self.embedding(ids), state)
        return self.head(self.dropout(output)), state


def loss_of(logits, target):
    return nn.functional.cross_entropy(logits.flatten(0, 1).float(), target.flatten())


@torch.no_grad()
def validation_loss(model, val, args, autocast, rank: int, world: int) -> float:
    """Mean loss in nats/char over the validation text in windows of seq_len, shared out by rank."""
    model.eval()
    windows = (len(val) - 1) // args.seq_len
    total = torch.zeros(2, dtype=torch.float64, device=val.device)  # loss sum, character count
    for first in range(rank * VAL_BATCH, windows, world * VAL_BATCH):
        starts = args.seq_len * torch.arange(first, min(first + VAL_BATCH, windows), device=val.device)
        chunk = val[starts[:, None] + torch.arange(args.seq_len + 1, device=val.device)]
        with autocast:
            logits, _ = model(chunk[:, :-1])
        total += torch.stack([loss_of(logits, chunk[:, 1:]) * chunk[:, 1:].numel(),
                              torch.tensor(chunk[:, 1:].numel(), device=val.device)]).double()
    if world > 1:
        dist.all_reduce(total)
    model.train()
    return (total[0] / total[1]).item()


def unigram_loss(corpus: Corpus, seq_len: int) -> float:
    """The validation loss (nats/char) of character frequencies counted on the training text,
    over the characters validation_loss predicts (add-one smoothed: every character has a count)."""
    counts = torch.bincount(corpus.train, minlength=len(corpus.chars)).double() + 1
    windows = (len(corpus.val) - 1) // seq_len
    targets = corpus.val[1:windows * seq_len + 1].reshape(windows, seq_len)
    return -(counts / counts.sum()).log()[targets].mean().item()


@torch.no_grad()
def sample(model, corpus: Corpus, prompt: str, length: int, temperature: float, device) -> str:
    """`length` characters generated after `prompt`, the same random draws at every call."""
    model.eval()
    generator = torch.Generator(device=device).manual_seed(0)
    index = {c: i for i, c in enumerate(corpus.chars)}
    ids = torch.tensor([[index[c] for c in prompt if c in index] or [0]], device=device)
    logits, state = model(ids)
    out = []
    for _ in range(length):
        probabilities = torch.softmax(logits[0, -1].float() / temperature, dim=-1)
        ids = torch.multinomial(probabilities, 1, generator=generator)[None]
        out.append(ids.item())
        logits, state = model(ids, state)
    model.train()
    return prompt + corpus.decode(out)


def rng_states(device) -> dict:
    states = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def set_rng_states(states: dict, device) -> None:
    torch.set_rng_state(states["cpu"])
    if device.type == "cuda":
        torch.cuda.set_rng_state(states["cuda"], device)


def save_checkpoint(path: Path, model, optimizer, scaler, step: int, batches: Batches, history, args,
                    corpus: Corpus, rank: int, world: int, device) -> None:
    """Rank 0 writes everything a resumed run needs (every rank's RNG states among it), atomically."""
    rngs = [None] * world
    if world > 1:
        dist.all_gather_object(rngs, rng_states(device))
    else:
        rngs = [rng_states(device)]
    if rank != 0:
        return
    checkpoint = {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(),
        "step": step, "epoch": step / batches.steps_per_epoch, "rng": rngs, "history": history,
        "args": vars(args), "corpus": {"chars": "".join(corpus.chars), "sha256": corpus.sha256},
    }
    temporary = path.with_suffix(".tmp")
    torch.save(checkpoint, temporary)
    os.replace(temporary, path)


def load_checkpoint(path: Path, model, optimizer, scaler, args, corpus: Corpus, rank: int, world: int, device):
    """Restore a checkpoint into model, optimizer and scaler; return (step, history). The
    optimizer takes this run's --lr and --weight-decay; the GradScaler's state carries over
    between fp16 runs only."""
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    saved = checkpoint["args"]
    changed = [f"--{k.replace('_', '-')} {saved[k]} -> {getattr(args, k)}"
               for k in RESUME_MUST_MATCH if saved[k] != getattr(args, k)]
    if changed:
        raise SystemExit(f"char_lm: {path} was made with other settings: {', '.join(changed)}")
    made_from = checkpoint.get("corpus", {})
    if made_from and made_from["chars"] != "".join(corpus.chars):
        raise SystemExit(f"char_lm: {path} was made from a corpus of other characters ({len(made_from['chars'])} -> "
                         f"{len(corpus.chars)}: the repository's text changed), which its model cannot read; "
                         "train afresh, without --resume")
    notes = [f"--{k.replace('_', '-')} {saved[k]} -> {getattr(args, k)}"
             for k in ("lr", "weight_decay", "amp") if saved.get(k) != getattr(args, k)]
    if made_from and made_from["sha256"] != corpus.sha256:
        notes.append("the corpus's text changed (the data order differs from an uninterrupted run's)")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    for group in optimizer.param_groups:
        group["lr"], group["weight_decay"] = args.lr, args.weight_decay
    if saved.get("amp") == "fp16" and args.amp == "fp16":
        scaler.load_state_dict(checkpoint["scaler"])
    if notes and rank == 0:
        tqdm.write(f"char_lm: resuming {path} with changes: {'; '.join(notes)}")
    if len(checkpoint["rng"]) == world:
        set_rng_states({k: v.cpu() for k, v in checkpoint["rng"][rank].items()}, device)
    elif rank == 0:
        tqdm.write(f"char_lm: {path} holds the RNG states of {len(checkpoint['rng'])} ranks, not {world}: "
                   "dropout draws differ from an uninterrupted run")
    return checkpoint["step"], checkpoint["history"]


def plot(history, unigram: float, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.plot(range(1, len(history["train"]) + 1), history["train"], lw=0.8, alpha=0.7, label="train")
    axes.plot(history["val_step"], history["val"], "o-", label="validation")
    axes.axhline(unigram, color="grey", ls="--", label=f"unigram (validation) {unigram:.2f}")
    axes.set(xlabel="step", ylabel="loss (nats/char)", title="char_lm: LLTM character language model")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def train(args, rank: int, world: int, device: torch.device) -> None:
    out = Path(args.out)
    checkpoint_path = out / "checkpoint.pt"
    corpus = Corpus()
    train_text, val_text = corpus.train.to(device), corpus.val.to(device)
    batches = Batches(train_text, args.seq_len, args.global_batch, args.seed, rank, world)
    if len(val_text) <= args.seq_len:  # no validation window: its loss would be 0 / 0
        raise SystemExit(f"char_lm: a window of {args.seq_len} characters needs more than the {len(val_text)} "
                         "validation characters")

    torch.manual_seed(args.seed)  # the same initial parameters on every rank, as in one process
    model = CharLM(len(corpus.chars), args.embed, args.state, args.layers, args.dropout, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp == "fp16")
    autocast = torch.autocast(device.type, dtype={"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp),
                              enabled=args.amp is not None)
    torch.manual_seed(args.seed + 1 + rank)  # dropout's draws, one stream per rank
    step, history = 0, {"train": [], "val_step": [], "val": []}
    if args.resume:
        if not checkpoint_path.is_file():
            raise SystemExit(f"char_lm: --resume: no checkpoint at {checkpoint_path}; a run writes one there at each "
                             f"evaluation (--eval-every) and at its end")
        step, history = load_checkpoint(checkpoint_path, model, optimizer, scaler, args, corpus, rank, world, device)
        if rank == 0:
            tqdm.write(f"char_lm: resumed from step {step} of {checkpoint_path}"
                       + (f"; it is at --steps {args.steps} already: nothing to train (raise --steps to go on)"
                          if step >= args.steps else f", training to step {args.steps}"))

    trained = model
    if world > 1:
        trained = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    if args.compile:
        trained = torch.compile(trained)

    unigram = unigram_loss(corpus, args.seq_len)
    if rank == 0:
        tqdm.write(f"char_lm: {len(corpus.train)} training and {len(corpus.val)} validation characters, "
                   f"{len(corpus.chars)} distinct; {sum(p.numel() for p in model.parameters())} parameters; "
                   f"{batches.steps_per_epoch} steps per epoch of {args.global_batch} x {args.seq_len}; "
                   f"{world} rank(s) on {device.type}; lltm_jit {lltm_jit.backend()}; "
                   f"unigram validation loss {unigram:.3f} nats/char")

    def evaluate():
        history["val_step"].append(step)
        history["val"].append(validation_loss(model, val_text, args, autocast, rank, world))
        if rank == 0:
            text = sample(model, corpus, args.prompt, args.sample_chars, args.temperature, device)
            tqdm.write(f"step {step} (epoch {step / batches.steps_per_epoch:.2f}): validation loss "
                       f"{history['val'][-1]:.3f} nats/char (unigram {unigram:.3f})\n---\n{text}\n---")
        save_checkpoint(checkpoint_path, model, optimizer, scaler, step, batches, history, args, corpus, rank, world,
                        device)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    start_step, train_time, timed_from = step, 0.0, None
    losses = []  # this interval's losses, on the device: one transfer per evaluation
    progress = tqdm(total=args.steps, initial=step, disable=rank != 0, dynamic_ncols=True, desc="char_lm")
    started = time.perf_counter()
    while step < args.steps:
        input, target = batches(step)
        with autocast:
            logits, _ = trained(input)
        loss = loss_of(logits, target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.detach())
        step += 1
        progress.update()
        if step == start_step + 1:  # the throughput leaves out the first step: compilation, warm-up
            synchronize()
            timed_from = time.perf_counter()
        if step % args.eval_every == 0 or step == args.steps:
            mean_losses = torch.stack(losses)
            if world > 1:
                dist.all_reduce(mean_losses, op=dist.ReduceOp.AVG)
            history["train"].extend(mean_losses.tolist())
            losses.clear()
            synchronize()
            if timed_from is not None:
                train_time += time.perf_counter() - timed_from
            progress.set_postfix(loss=f"{history['train'][-1]:.3f}")
            evaluate()
            timed_from = time.perf_counter()
    progress.close()

    if rank == 0 and step > start_step:
        out.mkdir(parents=True, exist_ok=True)
        plot(history, unigram, out / "losses.png")
        timed_steps = step - start_step - 1  # this run's first step (compiles, warms up) is not timed
        speed = "no step timed (a run's first is not)"
        if timed_steps > 0 and train_time:
            tokens_per_second = timed_steps * args.global_batch * args.seq_len / train_time
            speed = (f"{tokens_per_second:.4g} tokens/s, {len(corpus.train) / tokens_per_second:.3g} s per epoch "
                     "(training steps after this run's first)")
        best = min(history["val"])
        print(f"summary: {step} steps ({step / batches.steps_per_epoch:.1f} epochs) on {world} x {device.type}"
              f"{' amp ' + args.amp if args.amp else ''}{' compiled' if args.compile else ''}; "
              f"{speed}; validation loss {history['val'][-1]:.3f} nats/char (best {best:.3f}), "
              f"unigram {unigram:.3f}; {time.perf_counter() - started:.1f} s in all; {out / 'losses.png'}",
              flush=True)


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module's docstring as written, and each option's default."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (under torchrun: cuda:LOCAL_RANK)")
    parser.add_argument("--steps", type=int, default=1000, help="train until this step (counting resumed ones)")
    parser.add_argument("--batch", type=int, default=32, help="windows per step per process")
    parser.add_argument("--seq-len", type=int, default=128, help="characters per window")
    parser.add_argument("--embed", type=int, default=64, help="embedding features")
    parser.add_argument("--state", type=int, default=256, help="LLTM state size")
    parser.add_argument("--layers", type=int, default=2, help="LLTM layers")
    parser.add_argument("--dropout", type=float, default=0.2, help="between layers and before the output map")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW's learning rate")
    parser.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's weight decay")
    parser.add_argument("--clip", type=float, default=1.0, help="gradient norm clipping")
    parser.add_argument("--seed", type=int, default=0, help="initial parameters, data order, dropout")
    parser.add_argument("--eval-every", type=int, default=100, help="steps between validation, sample, checkpoint")
    parser.add_argument("--prompt", default="import torch\n", help="the text each sample starts from")
    parser.add_argument("--sample-chars", type=int, default=300, help="characters per sample")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature")
    parser.add_argument("--amp", nargs="?", const="bf16", choices=("bf16", "fp16"),
                        help="autocast: --amp is bf16 (CPU and CUDA); --amp fp16 adds a GradScaler (for CUDA)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--out", default="runs/char_lm", help="directory for checkpoint.pt and losses.png")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    args = parser.parse_args()
    for name in ("batch", "seq_len", "eval_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.temperature > 0:
        parser.error(f"--temperature must be positive, got {args.temperature}")
    try:
        torch.device(args.device)
    except RuntimeError:
        parser.error(f"--device {args.device}: expected cpu or cuda")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch sees no CUDA device")

    distributed = "WORLD_SIZE" in os.environ
    device = torch.device(args.device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    if device.type == "cuda":
        # An index throughout: torch 2.11's set_device refuses a bare "cuda", and the RNG state
        # and the generator of sample() name the device.
        device = torch.device("cuda", torch.cuda.current_device() if device.index is None else device.index)
        torch.cuda.set_device(device)
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    args.global_batch = args.batch * world
    Path(args.out).mkdir(parents=True, exist_ok=True)

    train(args, rank, world, device)

    if distributed:
        # As in train_ddp.py: no rank tears the group down while another is in a collective, and
        # the DDP model (gone with train()) no longer holds the group when it is destroyed.
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
