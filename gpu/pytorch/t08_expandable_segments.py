"""The caching allocator with expandable_segments:True (it reserves virtual address space
and maps physical memory into it: cuMemAddressReserve/cuMemCreate/cuMemMap/cuMemSetAccess):
allocations that grow, free and grow again, with their contents checked, and the
allocator's own accounting."""

import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

import torch  # noqa: E402  (the setting must come before torch reads it)

from common import DEVICE, ON_GPU, check, info, run, skip, value  # noqa: E402


def main():
    if ON_GPU:
        check("alloc_conf", os.environ["PYTORCH_CUDA_ALLOC_CONF"])
    else:
        skip("allocator", "the CUDA caching allocator needs a CUDA device")
    kept = []
    total = 0.0
    for i, mib in enumerate([1, 3, 8, 20, 64, 2, 128, 5, 256]):
        t = torch.full((mib * (1 << 20) // 4,), float(i + 1), device=DEVICE)
        total += t.double().sum().item()
        if i % 2 == 0:
            kept.append(t)
        del t
    value("filled_sum", total)
    value("kept_sum", sum(t.double().sum().item() for t in kept))
    if ON_GPU:
        torch.cuda.synchronize()
        check("allocated_bytes", torch.cuda.memory_allocated())
        info(f"reserved_bytes {torch.cuda.memory_reserved()}")
    kept = kept[::2]
    big = torch.arange(300 * (1 << 20) // 4, dtype=torch.float32, device=DEVICE)
    value("big_sum", big.double().sum().item())
    if ON_GPU:
        torch.cuda.synchronize()
        check("allocated_bytes_after_growth", torch.cuda.memory_allocated())
        stats = torch.cuda.memory_stats()
        info(f"segments {stats.get('segment.all.current')} reserved {torch.cuda.memory_reserved()}")
        del big, kept
        torch.cuda.empty_cache()
        check("allocated_after_empty_cache", torch.cuda.memory_allocated())
        info(f"reserved_after_empty_cache {torch.cuda.memory_reserved()}")


run(main)
