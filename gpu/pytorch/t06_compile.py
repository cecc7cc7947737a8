"""torch.compile (Inductor generating Triton kernels): a small MLP block, forward and
backward, compared with eager mode and output. gpu/apps.sh gives every run its own empty
TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, so each run compiles and loads its kernels."""

import time

import torch
import torch.nn as nn

from common import DEVICE, check, inputs, run, skip, sums, timing


class Block(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x)))) * torch.sigmoid(x)


def main():
    if not hasattr(torch, "compile"):
        skip("compile", f"torch {torch.__version__} has no torch.compile")
        return
    torch.manual_seed(0)
    model = Block().to(DEVICE)
    compiled = torch.compile(model)
    x = inputs(64, 256, seed=41).requires_grad_(True)
    t0 = time.perf_counter()
    y = compiled(x)
    y.square().mean().backward()
    timing("compile_and_first_step", time.perf_counter() - t0)
    sums("compiled_forward", y)
    sums("compiled_grad_input", x.grad)
    xe = x.detach().clone().requires_grad_(True)
    ye = model(xe)
    err = (ye - y).abs().max().item()
    check("compiled_vs_eager", "ok" if err < 1e-4 else f"error_{err}")
    for _ in range(3):  # later calls reuse the compiled kernels
        y = compiled(x)
    sums("compiled_again", y)


run(main)
