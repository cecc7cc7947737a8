"""The other CUDA libraries PyTorch reaches: cuSOLVER (solve, Cholesky, SVD, eigh), cuFFT
(2-D FFT and its inverse) and cuSPARSE (sparse times dense), each checked against the CPU
in double where the result is unique."""

import torch

from common import DEVICE, check, inputs, run, sums, value


def close(name, got, ref, tol):
    err = (got.detach().cpu().double() - ref).abs().max().item()
    check(name, "ok" if err < tol else f"error_{err}")


def main():
    a = inputs(256, 256, seed=81) + 16 * torch.eye(256, device=DEVICE)
    b = inputs(256, 8, seed=82)
    x = torch.linalg.solve(a, b)
    close("solve_vs_cpu", x, torch.linalg.solve(a.cpu().double(), b.cpu().double()), 1e-3)
    sums("solve", x)
    spd = a @ a.T
    chol = torch.linalg.cholesky(spd)
    close("cholesky_vs_cpu", chol, torch.linalg.cholesky(spd.cpu().double()), 1e-2)
    s = torch.linalg.svdvals(inputs(128, 64, seed=83))
    sums("svdvals", s)
    w = torch.linalg.eigvalsh(spd[:64, :64])
    value("eigvalsh.max", w.max().item())
    img = inputs(4, 128, 128, seed=84)
    f = torch.fft.fft2(img)
    sums("fft2.real", f.real)
    close("ifft2_roundtrip", torch.fft.ifft2(f).real, img.cpu().double(), 1e-4)
    dense = inputs(512, 512, seed=85)
    sparse = (dense * (dense > 1.5)).to_sparse()
    other = inputs(512, 64, seed=86)
    sums("sparse_mm", torch.sparse.mm(sparse, other))


run(main)
