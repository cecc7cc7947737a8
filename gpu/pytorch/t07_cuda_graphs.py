"""CUDA graphs through torch.cuda.graphs: a forward pass captured and replayed with new
inputs (checked against eager), and a whole training step (forward, backward, a capturable
Adam step) captured once and replayed for 10 steps."""

import torch
import torch.nn as nn

from common import DEVICE, ON_GPU, check, inputs, labels, run, skip, sums, value


def main():
    if not ON_GPU:
        skip("graphs", "CUDA graphs need a CUDA device")
        return
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).to(DEVICE)
    static_x = inputs(64, 256, seed=51)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_y = model(static_x)
    worst = 0.0
    for i in range(5):
        static_x.copy_(inputs(64, 256, seed=52 + i))
        g.replay()
        with torch.no_grad():
            worst = max(worst, (static_y - model(static_x)).abs().max().item())
        sums(f"replay[{i}]", static_y)
    check("replay_vs_eager", "ok" if worst < 1e-5 else f"error_{worst}")

    # a whole training step in one graph (the pattern of the PyTorch documentation)
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(DEVICE)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, capturable=True)
    loss_fn = nn.CrossEntropyLoss()
    data_x = inputs(64, 256, seed=60)
    data_y = labels(64, 10, seed=61)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(net(data_x), data_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    step = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(step):
        static_loss = loss_fn(net(data_x), data_y)
        static_loss.backward()
        opt.step()
    for i in range(10):
        data_x.copy_(inputs(64, 256, seed=70 + i))
        step.replay()
        value(f"train_loss[{i}]", static_loss.item())
    sums("trained_weights", torch.cat([p.detach().flatten() for p in net.parameters()]))


run(main)
