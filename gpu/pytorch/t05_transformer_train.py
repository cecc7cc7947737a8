"""A small transformer language model trained for 20 steps with AdamW under bf16 autocast
(scaled-dot-product attention kernels, layer norms, embeddings); losses and final weights
are the output."""

import time

import torch
import torch.nn as nn

from common import DEVICE, labels, run, sums, timing, value


class TinyLM(nn.Module):
    def __init__(self, vocab=1000, d=128, heads=4, layers=2, seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        h = self.encoder(h, mask=self.mask)
        return self.head(h)


def main():
    torch.manual_seed(0)
    model = TinyLM().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    tokens = labels(32 * 65, 1000, seed=31).view(32, 65)
    x, y = tokens[:, :-1], tokens[:, 1:]
    loss_fn = nn.CrossEntropyLoss()
    for step in range(20):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=DEVICE.split(":")[0], dtype=torch.bfloat16):
            logits = model(x)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        opt.step()
        value(f"loss[{step}]", loss.item())
        if step == 4:  # steps 5-19 are the steady state (loss.item() waits for each step)
            t0 = time.perf_counter()
    timing("train_step", (time.perf_counter() - t0) / 15)
    sums("final_weights", torch.cat([p.detach().flatten().float() for p in model.parameters()]))


run(main)
