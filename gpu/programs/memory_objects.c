/* memory_objects: the strided copies and 2D memsets (docs/memory.md). 2D copies host →
 * pitched device → host from pageable and page-locked memory at offsets, sizes that take
 * every ivcuda path (one inline request, batched rows, rows wider than the inline limit,
 * the pool); a kernel reading the pitched rows; 3D copies between linear layouts
 * (host, device, unified), the peer forms, cuMemsetD2D8/16/32 (sync and async) and
 * cuMemcpyBatchAsync; stream-ordered allocation from the default pool; registered host
 * memory. Every result is compared with the CPU's copy and printed as a
 * checksum, so native and ivcuda output must be equal. */
#include "common.h"

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 7;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (unsigned char)(x >> 24);
    }
}

static void cpu_copy(unsigned char *dst, size_t dpitch, size_t drows, const unsigned char *src, size_t spitch,
                     size_t srows, size_t w, size_t h, size_t d)
{
    for (size_t z = 0; z < d; z++)
        for (size_t y = 0; y < h; y++)
            memcpy(dst + z * dpitch * drows + y * dpitch, src + z * spitch * srows + y * spitch, w);
}

static void report(const char *what, const unsigned char *got, const unsigned char *want, size_t n)
{
    int same = memcmp(got, want, n) == 0;
    printf("memory_objects %s %s checksum=%016llx\n", what, same ? "ok" : "WRONG",
           (unsigned long long)fnv1a(got, n));
    if (!same) exit(1);
}

/* host (pitch hpitch, from x 3 y 2) → pitched device (x 16 y 1) → host (x 1), then row sums on the GPU */
static void copy_2d(CUfunction row_sums, unsigned char *src, unsigned char *dst, size_t w, size_t h, size_t hpitch,
                    const char *what)
{
    CUdeviceptr d, sums;
    size_t dpitch;
    CK(cuMemAllocPitch(&d, &dpitch, w + 16, h + 2, 4));
    CK(cuMemAlloc(&sums, h * sizeof(unsigned)));
    size_t hbytes = hpitch * (h + 3);
    fill_pattern(src, hbytes, (unsigned)(w + h));
    memset(dst, 0x5a, hbytes);
    CUDA_MEMCPY2D up = {0};
    up.srcXInBytes = 3, up.srcY = 2, up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = src, up.srcPitch = hpitch;
    up.dstXInBytes = 16, up.dstY = 1, up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = d, up.dstPitch = dpitch;
    up.WidthInBytes = w, up.Height = h;
    CK(cuMemcpy2D(&up));
    CUDA_MEMCPY2D down = {0};
    down.srcXInBytes = 16, down.srcY = 1, down.srcMemoryType = CU_MEMORYTYPE_DEVICE, down.srcDevice = d;
    down.srcPitch = dpitch, down.dstXInBytes = 1, down.dstMemoryType = CU_MEMORYTYPE_HOST, down.dstHost = dst;
    down.dstPitch = hpitch, down.WidthInBytes = w, down.Height = h;
    CK(cuMemcpy2D(&down));
    unsigned char *want = malloc(hbytes);
    if (!want) die("malloc");
    memset(want, 0x5a, hbytes);
    cpu_copy(want + 1, hpitch, h, src + 3 + 2 * hpitch, hpitch, h, w, h, 1);
    report(what, dst, want, hbytes);

    CUdeviceptr first = d + dpitch + 16;
    unsigned long long pitch = dpitch;
    int width = (int)w, height = (int)h;
    void *args[] = {&first, &pitch, &width, &height, &sums};
    CK(cuLaunchKernel(row_sums, (unsigned)((h + 127) / 128), 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    unsigned *got = malloc(h * sizeof(unsigned)), *expect = malloc(h * sizeof(unsigned));
    if (!got || !expect) die("malloc");
    CK(cuMemcpyDtoH(got, sums, h * sizeof(unsigned)));
    for (size_t y = 0; y < h; y++) {
        unsigned s = 0;
        for (size_t x = 0; x < w; x++) s += src[3 + (2 + y) * hpitch + x] * (unsigned)(x + 1);
        expect[y] = s;
    }
    char line[96];
    snprintf(line, sizeof line, "%s row sums", what);
    report(line, (unsigned char *)got, (unsigned char *)expect, h * sizeof(unsigned));
    free(want);
    free(got);
    free(expect);
    CK(cuMemFree(d));
    CK(cuMemFree(sums));
}

static void copies_2d(CUfunction row_sums)
{
    static const size_t sizes[][3] = {{40, 7, 64}, {300, 1000, 333}, {200000, 3, 200017}, {4096, 2048, 4100}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t w = sizes[i][0], h = sizes[i][1], pitch = sizes[i][2];
        unsigned char *a = malloc(pitch * (h + 3)), *b = malloc(pitch * (h + 3));
        if (!a || !b) die("malloc");
        char what[64];
        snprintf(what, sizeof what, "2D pageable %zux%zu pitch %zu", w, h, pitch);
        copy_2d(row_sums, a, b, w, h, pitch, what);
        free(a);
        free(b);
    }
    size_t w = 1000, h = 300, pitch = 1024;
    unsigned char *a, *b;
    CK(cuMemAllocHost((void **)&a, pitch * (h + 3)));
    CK(cuMemHostAlloc((void **)&b, pitch * (h + 3), 0));
    copy_2d(row_sums, a, b, w, h, pitch, "2D pinned 1000x300 pitch 1024");
    CK(cuMemFreeHost(a));
    CK(cuMemFreeHost(b));
}

static void copies_3d(CUcontext ctx)
{
    size_t w = 40, h = 5, depth = 4, n1 = 64 * 6 * depth, n2 = 48 * 5 * depth;
    CUdeviceptr d1, d2;
    CK(cuMemAlloc(&d1, n1));
    CK(cuMemAlloc(&d2, n2));
    CK(cuMemsetD8(d1, 0, n1));
    CK(cuMemsetD8(d2, 0, n2));
    unsigned char *src = malloc(w * h * depth), *got = malloc(n2), *want = calloc(1, n2), *mid = calloc(1, n1);
    if (!src || !got || !want || !mid) die("malloc");
    fill_pattern(src, w * h * depth, 77);
    CUDA_MEMCPY3D up = {0};
    up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = src, up.srcPitch = w, up.srcHeight = h;
    up.dstY = 1, up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = d1, up.dstPitch = 64, up.dstHeight = 6;
    up.WidthInBytes = w, up.Height = h, up.Depth = depth;
    CK(cuMemcpy3D(&up));
    CUDA_MEMCPY3D across = {0};
    across.srcY = 1, across.srcMemoryType = CU_MEMORYTYPE_UNIFIED, across.srcDevice = d1, across.srcPitch = 64;
    across.srcHeight = 6, across.dstXInBytes = 8, across.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    across.dstDevice = d2, across.dstPitch = 48, across.dstHeight = 5;
    across.WidthInBytes = w, across.Height = h, across.Depth = depth;
    CK(cuMemcpy3D(&across));
    CK(cuMemcpyDtoH(got, d2, n2));
    cpu_copy(mid + 64, 64, 6, src, w, h, w, h, depth);
    cpu_copy(want + 8, 48, 5, mid + 64, 64, 6, w, h, depth);
    report("3D host -> device -> device (unified)", got, want, n2);

    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUDA_MEMCPY3D_PEER peer = {0};
    peer.srcXInBytes = 8, peer.srcMemoryType = CU_MEMORYTYPE_DEVICE, peer.srcDevice = d2, peer.srcContext = ctx;
    peer.srcPitch = 48, peer.srcHeight = 5, peer.dstMemoryType = CU_MEMORYTYPE_DEVICE, peer.dstDevice = d1;
    peer.dstContext = ctx, peer.dstPitch = 64, peer.dstHeight = 6, peer.WidthInBytes = w, peer.Height = h;
    peer.Depth = 1;
    CK(cuMemcpy3DPeerAsync(&peer, stream));
    CK(cuMemcpyPeerAsync(d2, ctx, d1, ctx, 64, stream));
    unsigned char row[64];
    CK(cuMemcpyDtoHAsync(row, d2, 64, stream));
    CK(cuStreamSynchronize(stream));
    report("3D peer and peer copy", row, src, w);
    CK(cuStreamDestroy(stream));
    free(src);
    free(got);
    free(want);
    free(mid);
    CK(cuMemFree(d1));
    CK(cuMemFree(d2));
}

static void memsets_2d(void)
{
    CUdeviceptr d;
    CUstream stream;
    CK(cuStreamCreate(&stream, 0));
    CK(cuMemAlloc(&d, 32 * 8));
    CK(cuMemsetD8(d, 0, 32 * 8));
    CK(cuMemsetD2D8(d, 32, 0x11, 5, 2));
    CK(cuMemsetD2D16(d + 2 * 32, 32, 0x2233, 4, 2));
    CK(cuMemsetD2D32Async(d + 4 * 32 + 4, 32, 0x44556677u, 3, 3, stream));
    unsigned char got[32 * 8], want[32 * 8];
    memset(want, 0, sizeof want);
    for (int y = 0; y < 2; y++) memset(want + y * 32, 0x11, 5);
    for (int y = 2; y < 4; y++)
        for (int x = 0; x < 4; x++) want[y * 32 + 2 * x] = 0x33, want[y * 32 + 2 * x + 1] = 0x22;
    for (int y = 4; y < 7; y++)
        for (int x = 0; x < 3; x++) {
            unsigned char *p = want + y * 32 + 4 + 4 * x;
            p[0] = 0x77, p[1] = 0x66, p[2] = 0x55, p[3] = 0x44;
        }
    CUDA_MEMCPY2D down = {0};
    down.srcMemoryType = CU_MEMORYTYPE_DEVICE, down.srcDevice = d, down.srcPitch = 32;
    down.dstMemoryType = CU_MEMORYTYPE_HOST, down.dstHost = got, down.dstPitch = 32;
    down.WidthInBytes = 32, down.Height = 8;
    CK(cuMemcpy2DAsync(&down, stream));
    CK(cuStreamSynchronize(stream));
    report("memsetD2D8/16/32", got, want, sizeof want);

#if CUDA_VERSION >= 12080
    unsigned char in[100], out[100];
    fill_pattern(in, sizeof in, 5);
    CUdeviceptr dsts[3] = {d, d + 128, (CUdeviceptr)(uintptr_t)out};
    CUdeviceptr srcs[3] = {(CUdeviceptr)(uintptr_t)in, d, d + 128};
    size_t lens[3] = {100, 100, 100}, idx = 0;
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    /* pageable sources: read during the call, which the driver allows for them */
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
#if CUDA_VERSION >= 13000
    CK(cuMemcpyBatchAsync(dsts, srcs, lens, 3, &attr, &idx, 1, stream));
#else
    size_t fail = 0;
    CK(cuMemcpyBatchAsync(dsts, srcs, lens, 3, &attr, &idx, 1, &fail, stream));
#endif
    CK(cuStreamSynchronize(stream));
    report("memcpy batch", out, in, sizeof in);
#endif
    CK(cuMemFree(d));
    CK(cuStreamDestroy(stream));
}

/* CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: the device's current pool for cuMemAllocAsync's
 * allocation, the pool given for cuMemAllocFromPoolAsync's, NULL for cuMemAlloc's. */
static const char *which_pool(CUmemoryPool got, CUmemoryPool current, CUmemoryPool given)
{
    return got == NULL ? "NULL" : got == current ? "current" : got == given ? "given" : "OTHER";
}

static void pool_handles(CUdevice dev, CUmemoryPool given, CUdeviceptr from_current, CUdeviceptr from_given)
{
    CUmemoryPool current = NULL, of_current = NULL, of_given = NULL, of_plain = (CUmemoryPool)1;
    CK(cuDeviceGetMemPool(&current, dev));
    CUresult r_current = cuPointerGetAttribute(&of_current, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, from_current);
    CUresult r_given = cuPointerGetAttribute(&of_given, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, from_given + 4096);
    CUdeviceptr plain;
    CK(cuMemAlloc(&plain, 4096));
    CUresult r_plain = cuPointerGetAttribute(&of_plain, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, plain);
    CK(cuMemFree(plain));
    printf("memory_objects mempool_handle cuMemAllocAsync %s %s, cuMemAllocFromPoolAsync %s %s, cuMemAlloc %s %s\n",
           result_name(r_current), which_pool(of_current, current, NULL), result_name(r_given),
           which_pool(of_given, NULL, given), result_name(r_plain), which_pool(of_plain, current, given));
}

/* Stream-ordered allocation from the device's default pool: allocate, fill, copy back, free, all in
 * stream order; the pool's attributes are set and read (their values as info: pool bookkeeping
 * is the driver's). */
static void pools(CUdevice dev)
{
    CUmemoryPool pool;
    CK(cuDeviceGetDefaultMemPool(&pool, dev));
    cuuint64_t threshold = (cuuint64_t)64 << 20, got_threshold = 0;
    CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got_threshold));
    printf("memory_objects pool release threshold %s\n", got_threshold == threshold ? "ok" : "WRONG");
    int follow = -1;
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &follow));
    printf("info: pool reuse_follow_event_dependencies=%d\n", follow);
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    enum { N = 1 << 20 };
    unsigned char *host = malloc(N), *want = malloc(N);
    if (!host || !want) die("malloc");
    for (int round = 0; round < 3; round++) {
        CUdeviceptr a, b;
        CK(cuMemAllocAsync(&a, N, stream));
        CK(cuMemAllocFromPoolAsync(&b, N, pool, stream));
        if (round == 0) /* the pool each came from (ivcuda: the process's handle of it) */
            pool_handles(dev, pool, a, b);
        CK(cuMemsetD32Async(a, 0x01010101u * (unsigned)(round + 1), N / 4, stream));
        CK(cuMemcpyDtoDAsync(b, a, N, stream));
        CK(cuMemsetD8Async(b + 100, 0xee, 10, stream));
        CK(cuMemcpyDtoHAsync(host, b, N, stream));
        CK(cuMemFreeAsync(a, stream));
        CK(cuMemFreeAsync(b, stream));
        CK(cuStreamSynchronize(stream));
        memset(want, round + 1, N);
        memset(want + 100, 0xee, 10);
        char what[48];
        snprintf(what, sizeof what, "pool round %d", round);
        report(what, host, want, N);
    }
    cuuint64_t used = 1;
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    printf("info: pool used after frees=%llu\n", (unsigned long long)used);
    CK(cuMemPoolTrimTo(pool, 0));
    free(host);
    free(want);
    CK(cuStreamDestroy(stream));
}

/* The pointer attributes of registered memory, each with its result: ivcuda answers them as the
 * driver does except DEVICE_POINTER (the GPU cannot reach a guest's pages: docs/memory.md), which
 * is information only. */
static void registered_attributes(unsigned char *base, size_t n)
{
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)(base + 4096 + 12);
    CUcontext current = NULL, owner = NULL;
    CK(cuCtxGetCurrent(&current));
    unsigned type = 0, managed = 7, mapped = 7;
    int ordinal = -1;
    void *host = NULL;
    CUdeviceptr start = 0, device = 0;
    size_t size = 0;
    CUmemoryPool pool = (CUmemoryPool)1;
    CUresult r_type = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    CUresult r_owner = cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p);
    CUresult r_host = cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p);
    CUresult r_managed = cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
    CUresult r_ordinal = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    CUresult r_mapped = cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, p);
    CUresult r_start = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
    CUresult r_size = cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
    CUresult r_pool = cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p);
    printf("memory_objects registered memory_type %s %u, context %s %s, host_pointer %s %s\n", result_name(r_type),
           type, result_name(r_owner), owner == current ? "current" : "OTHER", result_name(r_host),
           host == (void *)(uintptr_t)p ? "the pointer" : "OTHER");
    printf("memory_objects registered is_managed %s %u, ordinal %s %d, mapped %s %u\n", result_name(r_managed),
           managed, result_name(r_ordinal), ordinal, result_name(r_mapped), mapped);
    printf("memory_objects registered range_start %s %s, range_size %s %s, mempool_handle %s %s\n",
           result_name(r_start), start == (CUdeviceptr)(uintptr_t)base ? "the base" : "OTHER", result_name(r_size),
           size == n ? "the size" : "OTHER", result_name(r_pool), pool == NULL ? "NULL" : "OTHER");
    CUresult r_device = cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p);
    printf("info: registered device_pointer %s %s\n", result_name(r_device),
           r_device != CUDA_SUCCESS ? "-" : device == p ? "the host pointer" : "another address");
}

/* Registered pageable memory: copies from and to it, a double registration refused. */
static void host_register(void)
{
    enum { N = 3 << 20 };
    unsigned char *a = aligned_alloc(4096, N), *b = aligned_alloc(4096, N);
    if (!a || !b) die("aligned_alloc");
    fill_pattern(a, N, 11);
    memset(b, 0, N);
    CK(cuMemHostRegister(a, N, CU_MEMHOSTREGISTER_PORTABLE));
    CK(cuMemHostRegister(b, N, 0));
    CUresult twice = cuMemHostRegister(a, 4096, 0);
    printf("memory_objects register twice -> %s\n", result_name(twice));
    registered_attributes(a, N);
    CUdeviceptr d;
    CK(cuMemAlloc(&d, N));
    CK(cuMemcpyHtoDAsync(d, a, N, NULL));
    CK(cuMemcpyDtoHAsync(b, d, N, NULL));
    CK(cuCtxSynchronize());
    report("registered host memory round trip", b, a, N);
    CK(cuMemHostUnregister(a));
    CK(cuMemHostUnregister(b));
    CUresult again = cuMemHostUnregister(a);
    printf("memory_objects unregister twice -> %s\n", result_name(again));
    CK(cuMemFree(d));
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    CUmodule module;
    char *ptx = read_kernel(dir, "memory_objects", "ptx", NULL);
    CK(cuModuleLoadData(&module, ptx));
    CUfunction row_sums;
    CK(cuModuleGetFunction(&row_sums, module, "row_sums"));
    /* ivcuda answers 0 (managed memory is refused, docs/memory.md): not compared */
    int managed = -1;
    CK(cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev));
    printf("info: attribute MANAGED_MEMORY=%d\n", managed);
    copies_2d(row_sums);
    copies_3d(ctx);
    memsets_2d();
    pools(dev);
    host_register();
    CK(cuModuleUnload(module));
    free(ptx);
    CK(cuCtxDestroy(ctx));
    printf("memory_objects done\n");
    return 0;
}
