"""Batch-1 inference of a small model, a launch-bound workload: its output, and (as `time:`
lines, never compared) the latency per forward pass for the benchmarks."""

import time

import torch
import torch.nn as nn

from common import DEVICE, inputs, run, sums, sync, timing


def main():
    torch.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(256, 10)).to(DEVICE).eval()
    x = inputs(1, 256, seed=91)
    with torch.inference_mode():
        for _ in range(20):
            y = model(x)
        sync()
        n = 300
        t0 = time.perf_counter()
        for _ in range(n):
            y = model(x)
        sync()
        timing("forward_batch1", (time.perf_counter() - t0) / n)
    sums("output", y)


run(main)
