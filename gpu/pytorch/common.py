"""What every acceptance script in gpu/pytorch shares: the device, seeded inputs made on the
CPU (so every run and every way of reaching the GPU starts from the same bytes), and the
output lines gpu/pytorch/compare.py reads:

    value <name> <float>   compared with native within the spread of two native runs
    check <name> <text>    must be equal to native
    info: ...              shown, never compared (may differ by design: free memory, versions)
    time: <name> <sec>     timings, never compared
    skip <name> <why>      a part that does not apply on this device

IVCUDA_TORCH_DEVICE=cpu runs a script on the CPU (the dry run's logic check); parts that
need CUDA then print `skip`."""

import os
import sys
import time
import traceback

import torch

DEVICE = os.environ.get("IVCUDA_TORCH_DEVICE", "cuda")
ON_GPU = DEVICE.startswith("cuda")


def value(name, x):
    print(f"value {name} {float(x)!r}", flush=True)


def check(name, text):
    print(f"check {name} {text}", flush=True)


def info(text):
    print(f"info: {text}", flush=True)


def skip(name, why):
    print(f"skip {name} {why}", flush=True)


def timing(name, seconds):
    print(f"time: {name} {seconds:.6f}", flush=True)


def inputs(*shape, seed, dtype=torch.float32, scale=1.0):
    """A tensor of normal values from a CPU generator, on the device."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float32) * scale).to(dtype).to(DEVICE)


def labels(n, classes, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, classes, (n,), generator=g).to(DEVICE)


def sums(name, t):
    """Sum and sum of absolute values, in double, as two values."""
    d = t.detach().double().cpu()
    value(f"{name}.sum", d.sum())
    value(f"{name}.abs", d.abs().sum())


def sync():
    if ON_GPU:
        torch.cuda.synchronize()


def exact_fp32():
    """fp32 matmuls and convolutions without TF32, so they can be compared with the CPU."""
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    except (AttributeError, RuntimeError, AssertionError, ValueError, TypeError):  # before PyTorch 2.9
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def run(main):
    """Runs main(); prints PASSED, or the traceback and FAILED with exit status 1."""
    t0 = time.perf_counter()
    try:
        main()
        sync()
    except Exception:  # the table shows why, the trace the details
        traceback.print_exc()
        print("FAILED", flush=True)
        sys.exit(1)
    timing("total", time.perf_counter() - t0)
    print("PASSED", flush=True)
