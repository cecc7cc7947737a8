"""The other CUDA libraries PyTorch reaches: cuSOLVER (solve, Cholesky, SVD, eigh), cuFFT
(2-D FFT and its inverse) and cuSPARSE (sparse times dense), each checked against the CPU
in double where the result is unique.

cuSPARSE's default sparse-times-dense product (torch.sparse.mm) accumulates with atomics, so its
sum differs from run to run in the last digits: on the H200 (2026-12-02 19:17 UTC at dba87c25,
8 runs each way, gpu/spread.sh t09_libraries 8) natively 6221.285886 to .285911 (sd 8.6e-6) and
through ivcuda .285870 to .285909 (sd 1.3e-5) -- the same spread, but a third run lies outside the
difference of two others about half the time, whoever runs it (the acceptance run of 19:10 UTC
at the same tree: 2.1 times the two native runs' difference). So, as t03 does with cuDNN, the
compared values come from cuSPARSE's deterministic algorithm (torch.bmm of a sparse and a dense
CUDA tensor under torch.use_deterministic_algorithms, PyTorch's documented deterministic case),
and the default algorithm still runs, checked against the CPU in double instead of compared by
value."""

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
    want = (dense * (dense > 1.5)).cpu().double() @ other.cpu().double()
    close("sparse_mm_default_algorithm_vs_cpu_double", torch.sparse.mm(sparse, other), want, 1e-3)
    batch = inputs(4, 256, 256, seed=87)
    sparse_batch = (batch * (batch > 1.5)).to_sparse()
    other_batch = inputs(4, 256, 64, seed=88)
    torch.use_deterministic_algorithms(True)
    product = torch.bmm(sparse_batch, other_batch)
    torch.use_deterministic_algorithms(False)
    close("sparse_bmm_vs_cpu_double", product,
          (batch * (batch > 1.5)).cpu().double() @ other_batch.cpu().double(), 1e-3)
    sums("sparse_bmm_deterministic", product)


run(main)
