"""Matrix products through cuBLAS and cuBLASLt: fp32 (no TF32, checked against the CPU in
double), bf16 and fp16, batched, and linear layers with a bias (cuBLASLt's epilogue)."""

import torch
import torch.nn.functional as F

from common import ON_GPU, check, exact_fp32, inputs, run, skip, sums


def main():
    exact_fp32()
    a = inputs(512, 384, seed=1)
    b = inputs(384, 256, seed=2)
    c = a @ b
    ref = a.double().cpu() @ b.double().cpu()
    err = (c.double().cpu() - ref).abs().max().item()
    check("fp32_vs_cpu_double", "ok" if err < 1e-3 else f"error_{err}")
    sums("fp32", c)
    sums("bf16", a.bfloat16() @ b.bfloat16())
    if ON_GPU:
        sums("fp16", a.half() @ b.half())
    else:
        skip("fp16", "fp16 matrix products need the GPU on older PyTorch")
    sums("bmm", torch.bmm(inputs(8, 128, 64, seed=3), inputs(8, 64, 32, seed=4)))
    w = inputs(1024, 512, seed=5, scale=0.05)
    bias = inputs(1024, seed=6)
    x = inputs(64, 512, seed=7)
    sums("linear_bf16", F.linear(x.bfloat16(), w.bfloat16(), bias.bfloat16()))
    sums("linear_gelu_bf16", F.gelu(F.linear(x.bfloat16(), w.bfloat16(), bias.bfloat16())))
    sums("addmm_fp32", torch.addmm(bias, x, w.t()))
    big = inputs(4096, 4096, seed=8, dtype=torch.bfloat16)
    sums("bf16_4096", big @ big)


run(main)
