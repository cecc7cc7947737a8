"""Convolutions through cuDNN: fp32 forward and backward (no TF32, forward checked against
the CPU in double), bf16 in channels-last, and a depthwise convolution."""

import torch
import torch.nn.functional as F

from common import check, exact_fp32, inputs, run, sums


def main():
    exact_fp32()
    torch.backends.cudnn.benchmark = False
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
    xb = inputs(8, 64, 56, 56, seed=13, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    wb = inputs(128, 64, 3, 3, seed=14, dtype=torch.bfloat16, scale=0.05).to(memory_format=torch.channels_last)
    sums("bf16_channels_last", F.conv2d(xb, wb, stride=2, padding=1))
    dw = inputs(64, 1, 5, 5, seed=15, scale=0.1)
    sums("depthwise", F.conv2d(inputs(4, 64, 28, 28, seed=16), dw, padding=2, groups=64))


run(main)
