"""torch.cuda.is_available(), the device count and properties, versions, and a first
round trip of data."""

import torch

from common import ON_GPU, check, info, run, skip, value, DEVICE


def main():
    check("is_available", torch.cuda.is_available())
    if not ON_GPU:
        skip("properties", "no CUDA device in this run")
    else:
        check("device_count", torch.cuda.device_count())
        check("current_device", torch.cuda.current_device())
        p = torch.cuda.get_device_properties(0)
        check("name", p.name.replace(" ", "_"))
        check("capability", f"{p.major}.{p.minor}")
        check("total_memory", p.total_memory)
        check("multi_processor_count", p.multi_processor_count)
        for attr in ("uuid", "L2_cache_size", "warp_size", "max_threads_per_multi_processor",
                     "shared_memory_per_block_optin", "regs_per_multiprocessor", "pci_bus_id"):
            if hasattr(p, attr):
                check(attr, str(getattr(p, attr)).replace(" ", "_"))
        check("cuda_runtime", torch.version.cuda)
        check("cudnn", torch.backends.cudnn.version())
        check("cudnn_available", torch.backends.cudnn.is_available())
        free, total = torch.cuda.mem_get_info()
        check("mem_total", total)
        info(f"mem_free {free}")
        info(f"torch {torch.__version__}")
    x = torch.arange(100000, dtype=torch.float32, device=DEVICE)
    y = (x * 2 + 1).cpu()
    value("roundtrip.sum", y.double().sum())
    check("roundtrip.last", float(y[-1]))


run(main)
