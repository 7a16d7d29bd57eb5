"""Import lltm_jit, print whether that initialised CUDA, then run the op in two forked workers
and print their output shapes."""

import multiprocessing as mp

import torch

import lltm_jit

print(torch.cuda.is_initialized())


def work(_):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args = [torch.randn(*shape, device=device) for shape in [(3, 4), (15, 9), (15,), (3, 5), (3, 5)]]
    return tuple(lltm_jit.lltm(*args)[0].shape)


if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(2)))
