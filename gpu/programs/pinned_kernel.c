/* pinned_kernel: pinned host pointers passed straight to kernels, as unified addressing allows
 * (NVIDIA's cudaGraphsPerfScaling does it with &hostData->latch). The pointers come from
 * cuMemHostAlloc and cuMemAllocHost without CU_MEMHOSTALLOC_DEVICEMAP and are never translated
 * through cuMemHostGetDevicePointer: a kernel reads what the CPU wrote through one and writes
 * what the CPU then reads through the other. Through ivcuda this needs the region mapped at the
 * server's address (docs/protocol.md §2a); when it is not, the program says so and stops before
 * launching, since such a kernel would fault and poison the server's CUDA process. */
#include "common.h"

enum { N = 1 << 20, THREADS = 256 };

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    int unified = 0;
    CK(cuDeviceGetAttribute(&unified, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev));
    printf("pinned_kernel unified_addressing=%s\n", unified ? "yes" : "no");
    if (!unified) {
        printf("pinned_kernel done (no unified addressing: nothing to check)\n");
        return 0;
    }
    char *ptx = read_kernel(dir, "streams", "ptx", NULL);
    CUmodule module;
    CK(cuModuleLoadData(&module, ptx));
    CUfunction sum_u32, fill_index;
    CK(cuModuleGetFunction(&sum_u32, module, "sum_u32"));
    CK(cuModuleGetFunction(&fill_index, module, "fill_index"));

    unsigned *in, *out;
    CK(cuMemHostAlloc((void **)&in, N * sizeof(unsigned), 0));
    CK(cuMemAllocHost((void **)&out, N * sizeof(unsigned)));
    CUdeviceptr din, dout;
    CK(cuMemHostGetDevicePointer(&din, in, 0));
    CK(cuMemHostGetDevicePointer(&dout, out, 0));
    int same = din == (CUdeviceptr)(uintptr_t)in && dout == (CUdeviceptr)(uintptr_t)out;
    printf("pinned_kernel device pointer is the host pointer: %s\n", same ? "yes" : "no");
    if (!same) {
        printf("pinned_kernel WRONG: a kernel given the host pointer would fault; not launched\n");
        return 1;
    }

    CUdeviceptr dsum;
    CK(cuMemAlloc(&dsum, sizeof(unsigned long long)));
    unsigned long long want = 0;
    for (unsigned i = 0; i < N; i++) {
        in[i] = i ^ 0xa5u;
        want += in[i];
    }
    CUdeviceptr host_in = (CUdeviceptr)(uintptr_t)in, host_out = (CUdeviceptr)(uintptr_t)out;
    int n = N;
    void *sum_args[] = { &host_in, &n, &dsum };
    CK(cuLaunchKernel(sum_u32, 1, 1, 1, 256, 1, 1, 0, NULL, sum_args, NULL));
    unsigned long long got = 0;
    CK(cuMemcpyDtoH(&got, dsum, sizeof got));
    printf("pinned_kernel kernel read through the host pointer sum=%llu %s\n", got, got == want ? "ok" : "WRONG");

    memset(out, 0, N * sizeof(unsigned));
    void *fill_args[] = { &host_out, &n };
    CK(cuLaunchKernel(fill_index, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, fill_args, NULL));
    CK(cuCtxSynchronize());
    int bad = 0;
    for (unsigned i = 0; i < N; i++) bad += out[i] != i * 3u + 1u;
    printf("pinned_kernel kernel write through the host pointer %s bad=%d\n", bad ? "WRONG" : "ok", bad);

    CK(cuMemFree(dsum));
    CK(cuMemFreeHost(in));
    CK(cuMemFreeHost(out));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(ptx);
    if (got != want || bad) return 1;
    printf("pinned_kernel done\n");
    return 0;
}
