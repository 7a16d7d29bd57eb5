#!/usr/bin/env python3
"""Train an LLTM sequence model with DistributedDataParallel, one process per GPU (or CPU ranks
over gloo without GPUs):

  torchrun --nproc_per_node 2 examples/train_ddp.py [--steps 30]

Every rank imports lltm_jit at the same moment: on a cold cache one rank builds and the others
wait for it. The task: predict the running mean of a random sequence from the LLTM's final state.
At the end, rank 0 checks that the ranks hold identical parameters (DDP kept them in step) and
that the loss went down; the exit status is 1 if not.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.distributed.nn  # noqa: F401  before init_process_group: see main()'s teardown
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import lltm_jit


class SequenceRegressor(nn.Module):
    def __init__(self, features: int, state: int, device: torch.device):
        super().__init__()
        self.rnn = lltm_jit.LLTMSequence(features, state, device=device)  # one operator call a sequence
        self.head = nn.Linear(state, 1, device=device)

    def forward(self, sequence):  # (time, batch, features) -> (batch,)
        _, (h_n, _) = self.rnn(sequence)
        return self.head(h_n[0]).squeeze(1)


def train(args, rank: int, world: int, device: torch.device) -> tuple[bool, bool]:
    """Train; return whether the ranks end with identical parameters and whether the loss fell."""
    torch.manual_seed(0)  # DDP broadcasts rank 0's parameters anyway
    device_ids = [device] if device.type == "cuda" else None
    model = DistributedDataParallel(SequenceRegressor(8, 32, device), device_ids=device_ids)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = torch.Generator(device=device).manual_seed(1 + rank)  # each rank its own batches
    losses = []
    for _ in range(args.steps):
        sequence = torch.randn(12, args.batch, 8, device=device, generator=data)
        target = sequence.mean(dim=(0, 2))
        loss = nn.functional.mse_loss(model(sequence), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    in_step = all(torch.equal(gathered[0], g) for g in gathered)
    # The ranks' mean loss (each rank has batches of its own), its first steps against its last:
    # the same answer, and exit status, on every rank.
    summed = torch.tensor(losses, device=device)
    dist.all_reduce(summed)  # the mean times the ranks: gloo has no average
    window = args.steps // 2
    learned = bool(summed[-window:].sum() < summed[:window].sum())
    if rank == 0:
        print(f"lltm_jit {lltm_jit.backend()} on {world} ranks ({device.type}): loss {losses[0]:.4f} -> "
              f"{losses[-1]:.4f}; parameters identical on every rank: {in_step}; the loss fell: {learned}")
    return in_step, learned


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module's docstring as written, and each option's default."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="training steps")
    parser.add_argument("--batch", type=int, default=64, help="sequences per step on each rank")
    args = parser.parse_args()
    if args.steps < 2 or args.batch < 1:
        parser.error("--steps must be at least 2 (the loss's first half against its second) and --batch at least 1")
    if "RANK" not in os.environ:  # init_process_group's env:// rendezvous needs torchrun's variables
        parser.error("run it under torchrun, e.g. torchrun --nproc_per_node 2 examples/train_ddp.py")

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    in_step, learned = train(args, rank, world, device)

    # Gloo's worker threads drop their last references to finished collectives (and to the
    # tensors those hold) a moment after the waiting rank has woken. Dropping a tensor that Python
    # has seen takes the GIL; once the interpreter is shutting down, that ends the thread inside a
    # destructor and std::terminate aborts the rank. destroy_process_group joins those threads
    # first, but only when nothing else holds the group: the DDP model went with train(), and
    # torch.distributed.nn, imported before init_process_group, holds no group in its functions'
    # `group=group.WORLD` defaults (DDP imports it, through torch._dynamo, after init otherwise).
    dist.barrier()  # no rank tears the group down while another is still in a collective
    dist.destroy_process_group()
    return 0 if in_step and learned else 1


if __name__ == "__main__":
    raise SystemExit(main())
