"""Convolutions through cuDNN: fp32 forward and backward (no TF32, forward checked against
the CPU in double), bf16 in channels-last, and a depthwise convolution.

The compared backward runs with cuDNN's deterministic algorithms. cuDNN's default weight
gradient for this shape accumulates with atomics, so its sum differs from run to run in the last
digits: on the H200 (2026-12-02 09:56 UTC at e8ddd15, 6 runs each way, as gpu/spread.sh t03_conv runs them) natively 106896.305 to
.316 (sd 0.0036) and through ivcuda .306 to .318 (sd 0.0049) — the same spread, but a third run
lies outside the difference of two others about half the time, whoever runs it. With the
deterministic algorithms every run gave the same bits, natively and through ivcuda (4 of 4). The
default algorithms still run, checked against the CPU in double instead of compared by value."""

import torch
import torch.nn.functional as F

from common import check, exact_fp32, inputs, run, sums


def main():
    exact_fp32()
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    x = inputs(8, 16, 32, 32, seed=11).requires_grad_(True)
    w = inputs(32, 16, 3, 3, seed=12, scale=0.1).requires_grad_(True)
    y = F.conv2d(x, w, padding=1)
    ref = F.conv2d(x.detach().double().cpu(), w.detach().double().cpu(), padding=1)
    err = (y.detach().double().cpu() - ref).abs().max().item()
    check("fp32_vs_cpu_double", "ok" if err < 1e-3 else f"error_{err}")
    sums("fp32_forward", y)
    y.square().sum().backward()
    sums("fp32_grad_input", x.grad)
    sums("fp32_grad_weight", w.grad)
    torch.backends.cudnn.deterministic = False
    x2 = x.detach().clone().requires_grad_(True)
    w2 = w.detach().clone().requires_grad_(True)
    F.conv2d(x2, w2, padding=1).square().sum().backward()
    xd = x.detach().double().cpu().requires_grad_(True)
    wd = w.detach().double().cpu().requires_grad_(True)
    F.conv2d(xd, wd, padding=1).square().sum().backward()
    for name, got, want in (("input", x2.grad, xd.grad), ("weight", w2.grad, wd.grad)):
        rel = ((got.detach().double().cpu() - want).abs().max() / want.abs().max()).item()
        check(f"fp32_grad_{name}_default_algorithms_vs_cpu_double", "ok" if rel < 1e-4 else f"error_{rel}")
    torch.backends.cudnn.deterministic = True
    xb = inputs(8, 64, 56, 56, seed=13, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    wb = inputs(128, 64, 3, 3, seed=14, dtype=torch.bfloat16, scale=0.05).to(memory_format=torch.channels_last)
    sums("bf16_channels_last", F.conv2d(xb, wb, stride=2, padding=1))
    dw = inputs(64, 1, 5, 5, seed=15, scale=0.1)
    sums("depthwise", F.conv2d(inputs(4, 64, 28, 28, seed=16), dw, padding=2, groups=64))


run(main)
