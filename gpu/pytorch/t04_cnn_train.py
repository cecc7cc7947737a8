"""A small CNN trained for 20 steps with AdamW under bf16 autocast; the loss of every step
and the final weights are the output."""

import time

import torch
import torch.nn as nn

from common import DEVICE, inputs, labels, run, sums, timing, value


def main():
    torch.manual_seed(0)  # initial weights, made on the CPU
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    x = inputs(128, 3, 32, 32, seed=21)
    y = labels(128, 10, seed=22)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(20):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=DEVICE.split(":")[0], dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        value(f"loss[{step}]", loss.item())
        if step == 4:  # steps 5-19 are the steady state (loss.item() waits for each step)
            t0 = time.perf_counter()
    timing("train_step", (time.perf_counter() - t0) / 15)
    sums("final_weights", torch.cat([p.detach().flatten().float() for p in model.parameters()]))


run(main)
