"""PyTorch under a VM's memory quota (issue 15, docs/sharing.md; run by gpu/sharing.sh through
VM a's cuda-server, the guest libcuda.so.1 and libnvidia-ml.so.1 on LD_LIBRARY_PATH):

    python3 quota_torch.py QUOTA_MIB MIN_MIB GO_FILE

- torch.cuda.mem_get_info()'s total and get_device_properties(0).total_memory are the quota
  (both come from the server's answers to cuMemGetInfo and cuDeviceTotalMem);
- 64 MiB tensors until torch.OutOfMemoryError: it must come, after more than MIN_MIB MiB and
  never beyond the quota (the caching allocator asks cudaMalloc for each block as it is);
- it then prints `holding` and holds the memory until GO_FILE exists (at most 30 s): meanwhile
  gpu/sharing.sh runs ivcuda-smi, which must list this process and its memory;
- the NVML-based parts torch has (the device count with PYTORCH_NVML_BASED_CUDA_CHECK=1, set by
  the caller; torch.cuda.utilization() and kin where the pynvml module is installed) are called,
  so that any NVML warning lands on stderr, which gpu/sharing.sh checks.

One line per check, `torch <check>: PASS|FAIL <what was seen>`; exit 0 when all pass. Warnings are
shown every time (not once per place), on stderr as Python prints them."""

import os
import sys
import time
import warnings

warnings.simplefilter("always")

import torch  # noqa: E402 (after the warnings filter, so that import-time warnings are shown too)

BLOCK = 64 << 20
failed = []


def verdict(name, ok, text):
    print(f"torch {name}: {'PASS' if ok else 'FAIL'} {text}", flush=True)
    if not ok:
        failed.append(name)


def main():
    quota = int(sys.argv[1]) << 20
    at_least = int(sys.argv[2]) << 20
    go_file = sys.argv[3]
    print(f"pid {os.getpid()} torch {torch.__version__} cuda {torch.version.cuda}", flush=True)
    # with PYTORCH_NVML_BASED_CUDA_CHECK=1 these ask NVML (nvmlInit, nvmlDeviceGetCount_v2) first
    available = torch.cuda.is_available()
    count = torch.cuda.device_count()
    verdict("device", available and count == 1, f"is_available {available}, device_count {count}")
    free, total = torch.cuda.mem_get_info()
    verdict("mem_get_info", total == quota and 0 < free <= quota,
            f"total {total >> 20} MiB, free {free >> 20} MiB (quota {quota >> 20} MiB)")
    props_total = torch.cuda.get_device_properties(0).total_memory
    verdict("total_memory", props_total == quota, f"{props_total >> 20} MiB (quota {quota >> 20} MiB)")

    blocks = []
    oom = None
    t0 = time.monotonic()
    try:
        while len(blocks) < quota // BLOCK + 16:  # bounded: a quota not enforced does not fill the card
            blocks.append(torch.empty(BLOCK, dtype=torch.uint8, device="cuda"))
    except getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError) as e:
        oom = e
    got = len(blocks) * BLOCK
    message = " ".join(str(oom).split())[:400] if oom is not None else "none"
    print(f"allocated {got >> 20} MiB in 64 MiB tensors in {time.monotonic() - t0:.2f} s; "
          f"memory_reserved {torch.cuda.memory_reserved() >> 20} MiB; the error: {message}", flush=True)
    verdict("OutOfMemoryError", oom is not None and at_least < got <= quota,
            f"{'raised' if oom is not None else 'not raised'} after {got >> 20} MiB "
            f"(expected more than {at_least >> 20} MiB, at most {quota >> 20} MiB)")
    free_now, _ = torch.cuda.mem_get_info()
    print(f"mem_get_info while holding: free {free_now >> 20} MiB", flush=True)

    # pynvml is optional in PyTorch; without it these raise ModuleNotFoundError and are not tried
    for name in ("utilization", "memory_usage", "temperature", "power_draw", "clock_rate"):
        fn = getattr(torch.cuda, name, None)
        if fn is None:
            continue
        try:
            print(f"info: torch.cuda.{name}() = {fn()}", flush=True)
        except ModuleNotFoundError as e:
            print(f"info: torch.cuda.{name}() not tried: {e}", flush=True)
            break
        except Exception as e:  # an NVML error is what this run is to show: said, not hidden
            print(f"info: torch.cuda.{name}() failed: {type(e).__name__}: {e}", flush=True)

    print(f"holding {got >> 20} MiB", flush=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.1)
    del blocks
    torch.cuda.empty_cache()
    print(f"released; failed: {' '.join(failed) or 'none'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
