/* pinned_async: page-locked host memory from cuMemHostAlloc and cuMemAllocHost,
 * asynchronous copies of 1 B .. 64 MiB through device memory and back (with a
 * device-to-device copy between), the memset family, and mapped host memory read
 * and written by kernels through cuMemHostGetDevicePointer. */
#include "common.h"

enum { THREADS = 256 };

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (unsigned char)(x >> 24);
    }
}

static void copy_sizes(CUstream stream)
{
    const size_t max = (size_t)64 << 20;
    unsigned char *src, *dst;
    CK(cuMemHostAlloc((void **)&src, max, CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemAllocHost((void **)&dst, max));
    CUdeviceptr d1, d2;
    CK(cuMemAlloc(&d1, max));
    CK(cuMemAlloc(&d2, max));
    unsigned seed = 1;
    for (size_t size = 1; size <= max; size *= 4, seed++) {
        fill_pattern(src, size, seed);
        memset(dst, 0, size);
        double t0 = now_seconds();
        CK(cuMemcpyHtoDAsync(d1, src, size, stream));
        CK(cuMemcpyDtoDAsync(d2, d1, size, stream));
        CK(cuMemcpyDtoHAsync(dst, d2, size, stream));
        CK(cuStreamSynchronize(stream));
        double t1 = now_seconds();
        int same = memcmp(src, dst, size) == 0;
        printf("pinned_async copy size=%zu %s checksum=%016llx\n", size, same ? "ok" : "WRONG",
               (unsigned long long)fnv1a(dst, size));
        printf("time: copy size=%zu %.3f ms\n", size, (t1 - t0) * 1e3);
        if (!same) exit(1);
    }
    /* Synchronous copies between device buffers and at an offset. */
    size_t part = (size_t)3 << 20;
    CK(cuMemcpyDtoD(d1 + 4096, d2 + 1, part));
    CK(cuMemcpyDtoH(dst, d1 + 4096, part));
    int same = memcmp(dst, src + 1, part) == 0;
    printf("pinned_async dtod offset %s\n", same ? "ok" : "WRONG");
    if (!same) exit(1);
    CK(cuMemFree(d1));
    CK(cuMemFree(d2));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(dst));
}

static void check_bytes(const unsigned char *p, const unsigned char *want, size_t n, const char *what)
{
    int same = memcmp(p, want, n) == 0;
    printf("pinned_async %s %s\n", what, same ? "ok" : "WRONG");
    if (!same) exit(1);
}

static void memsets(CUstream stream)
{
    enum { BYTES = 1 << 20 };
    CUdeviceptr d;
    unsigned char *host, *want = malloc(BYTES);
    if (!want) die("malloc");
    CK(cuMemAlloc(&d, BYTES));
    CK(cuMemAllocHost((void **)&host, BYTES));

    /* Each memset covers a sub-range, so the bytes around it must keep the previous value. */
    memset(want, 0, BYTES);
    CK(cuMemsetD8(d, 0, BYTES));
    CK(cuMemsetD8(d + 3, 0xab, 1001));
    memset(want + 3, 0xab, 1001);
    CK(cuMemcpyDtoH(host, d, BYTES));
    check_bytes(host, want, BYTES, "memsetD8");

    CK(cuMemsetD16(d + 2048, 0x1234, 777));
    for (int i = 0; i < 777; i++) memcpy(want + 2048 + 2 * i, &(uint16_t){ 0x1234 }, 2);
    CK(cuMemcpyDtoH(host, d, BYTES));
    check_bytes(host, want, BYTES, "memsetD16");

    CK(cuMemsetD32(d + 8192, 0xdeadbeefu, 4099));
    for (int i = 0; i < 4099; i++) memcpy(want + 8192 + 4 * i, &(uint32_t){ 0xdeadbeefu }, 4);
    CK(cuMemcpyDtoH(host, d, BYTES));
    check_bytes(host, want, BYTES, "memsetD32");

    CK(cuMemsetD8Async(d + 100000, 0x5a, 333, stream));
    memset(want + 100000, 0x5a, 333);
    CK(cuMemsetD16Async(d + 200000, 0xbeef, 1000, stream));
    for (int i = 0; i < 1000; i++) memcpy(want + 200000 + 2 * i, &(uint16_t){ 0xbeef }, 2);
    CK(cuMemsetD32Async(d + 300000, 0x01020304u, 50000, stream));
    for (int i = 0; i < 50000; i++) memcpy(want + 300000 + 4 * i, &(uint32_t){ 0x01020304u }, 4);
    CK(cuMemcpyDtoHAsync(host, d, BYTES, stream));
    CK(cuStreamSynchronize(stream));
    check_bytes(host, want, BYTES, "memsetAsync");
    printf("pinned_async memset checksum=%016llx\n", (unsigned long long)fnv1a(host, BYTES));

    CK(cuMemFree(d));
    CK(cuMemFreeHost(host));
    free(want);
}

static void mapped(CUdevice dev, CUmodule module)
{
    int can_map = 0;
    CK(cuDeviceGetAttribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
    if (!can_map) {
        printf("pinned_async mapped unsupported-by-device\n");
        return;
    }
    enum { N = 1 << 20 };
    CUfunction sum_u32, fill_index;
    CK(cuModuleGetFunction(&sum_u32, module, "sum_u32"));
    CK(cuModuleGetFunction(&fill_index, module, "fill_index"));

    unsigned *host;
    CK(cuMemHostAlloc((void **)&host, N * sizeof(unsigned), CU_MEMHOSTALLOC_DEVICEMAP));
    unsigned flags = 0;
    CK(cuMemHostGetFlags(&flags, host));
    printf("pinned_async host flags devicemap=%s\n", (flags & CU_MEMHOSTALLOC_DEVICEMAP) ? "yes" : "no");
    CUdeviceptr dhost, dsum;
    CK(cuMemHostGetDevicePointer(&dhost, host, 0));
    CK(cuMemAlloc(&dsum, sizeof(unsigned long long)));

    /* The kernel reads what the CPU wrote. */
    unsigned long long want = 0;
    for (unsigned i = 0; i < N; i++) {
        host[i] = i ^ 0x55u;
        want += host[i];
    }
    int n = N;
    void *sum_args[] = { &dhost, &n, &dsum };
    CK(cuLaunchKernel(sum_u32, 1, 1, 1, 256, 1, 1, 0, NULL, sum_args, NULL));
    unsigned long long got = 0;
    CK(cuMemcpyDtoH(&got, dsum, sizeof got));
    printf("pinned_async mapped read sum=%llu %s\n", got, got == want ? "ok" : "WRONG");

    /* The CPU reads what the kernel wrote. */
    void *fill_args[] = { &dhost, &n };
    CK(cuLaunchKernel(fill_index, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, fill_args, NULL));
    CK(cuCtxSynchronize());
    int bad = 0;
    for (unsigned i = 0; i < N; i++) bad += host[i] != i * 3u + 1u;
    printf("pinned_async mapped write %s bad=%d\n", bad ? "WRONG" : "ok", bad);

    CK(cuMemFree(dsum));
    CK(cuMemFreeHost(host));
    if (got != want || bad) exit(1);
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    char *ptx = read_kernel(dir, "streams", "ptx", NULL);
    CUmodule module;
    CK(cuModuleLoadData(&module, ptx));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));

    copy_sizes(stream);
    memsets(stream);
    mapped(dev, module);

    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(ptx);
    printf("pinned_async done\n");
    return 0;
}
