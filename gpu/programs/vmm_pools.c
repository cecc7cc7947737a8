/* vmm_pools: virtual memory management and created memory pools (docs/memory.md).
 * VMM: reserve an address range, create two physical allocations, map them side by side,
 * release the handles while mapped (as vectorAddMMAP does), set access, copy a pattern in
 * over the seam, let a kernel update every word of the whole range, copy it back and compare
 * with the CPU; access, properties and retain; unmap, address free. Pools: a created pool
 * with attributes, access, async allocations on a stream a kernel writes, the device's
 * current pool set to it and back (both the CUDA 11.2 and the CUDA 13 names), trim and
 * destroy. Every result is compared with the CPU's and printed with a checksum, so native
 * and ivcuda output must be equal; what depends on the driver's bookkeeping is `info:`. */
#include "common.h"

static CUfunction scale_add;

static void cpu_scale_add(unsigned *w, size_t n, unsigned mul, unsigned add)
{
    for (size_t i = 0; i < n; i++) w[i] = w[i] * mul + add + (unsigned)i;
}

static void fill(unsigned *w, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 11;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        w[i] = x;
    }
}

static void report(const char *what, const void *got, const void *want, size_t n)
{
    int same = memcmp(got, want, n) == 0;
    printf("vmm_pools %s %s checksum=%016llx\n", what, same ? "ok" : "WRONG", (unsigned long long)fnv1a(got, n));
    if (!same) exit(1);
}

static void launch(CUdeviceptr words, size_t n, unsigned mul, unsigned add, CUstream stream)
{
    unsigned long long count = n;
    void *args[] = {&words, &count, &mul, &add};
    CK(cuLaunchKernel(scale_add, 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
}

static void vmm(CUdevice dev)
{
    int supported = 0;
    CK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    printf("vmm_pools attribute VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED=%d\n", supported);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t g = 0, recommended = 0;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    printf("vmm_pools granularity minimum=%zu recommended=%zu\n", g, recommended);

    /* two allocations of 3 granules each, mapped side by side in a range of 8 */
    size_t piece = 3 * g, range = 8 * g, used = 2 * piece;
    CUdeviceptr va;
    CK(cuMemAddressReserve(&va, range, 0, 0, 0));
    CUmemGenericAllocationHandle a, b;
    CK(cuMemCreate(&a, piece, &prop, 0));
    CK(cuMemCreate(&b, piece, &prop, 0));
    CK(cuMemMap(va, piece, 0, a, 0));
    CK(cuMemMap(va + piece, piece, 0, b, 0));
    /* the mappings keep the memory: the handles go now */
    CK(cuMemRelease(a));
    CK(cuMemRelease(b));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(va, used, &access, 1));
    unsigned long long flags = 0;
    CK(cuMemGetAccess(&flags, &prop.location, va + piece + 4096));
    printf("vmm_pools access of the second mapping=%llu\n", flags);

    size_t n = used / sizeof(unsigned);
    unsigned *host = malloc(used), *want = malloc(used), *back = malloc(used);
    if (!host || !want || !back) die("malloc");
    fill(host, n, 1);
    memcpy(want, host, used);
    CK(cuMemcpyHtoD(va, host, used));
    launch(va, n, 3, 7, NULL);
    cpu_scale_add(want, n, 3, 7);
    /* a memset over the seam of the two mappings */
    CK(cuMemsetD32(va + piece - 64, 0xfeedf00du, 32));
    for (size_t i = (piece - 64) / 4; i < (piece + 64) / 4; i++) want[i] = 0xfeedf00du;
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(back, va, used));
    report("mapped range written by a kernel, read over two mappings", back, want, used);

    CUmemGenericAllocationHandle again;
    CK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + piece + 12345)));
    CUmemAllocationProp got;
    memset(&got, 0, sizeof got);
    CK(cuMemGetAllocationPropertiesFromHandle(&got, again));
    printf("vmm_pools properties type=%d location=%d/%d\n", (int)got.type, (int)got.location.type, got.location.id);
    /* a shareable handle of an allocation that asked for none: the driver refuses it too
       (ivcuda refuses every export): not compared */
    int fd = -1;
    printf("info: export to a file descriptor -> %s\n",
           result_name(cuMemExportToShareableHandle(&fd, again, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)));
    CK(cuMemRelease(again));

    CK(cuMemUnmap(va, piece));
    CK(cuMemUnmap(va + piece, piece));
    CK(cuMemAddressFree(va, range));
    free(host);
    free(want);
    free(back);
}

static void pools(CUdevice dev)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CUmemoryPool pool, fallback;
    CK(cuMemPoolCreate(&pool, &props));
    CK(cuDeviceGetDefaultMemPool(&fallback, dev));
    printf("vmm_pools created pool is the default: %s\n", pool == fallback ? "yes" : "no");

    cuuint64_t threshold = 64u << 20, read_back = 0;
    CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &read_back));
    printf("vmm_pools release threshold=%llu\n", (unsigned long long)read_back);
    int opportunistic = 1;
    CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &(int){0}));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic));
    printf("vmm_pools reuse_allow_opportunistic=%d\n", opportunistic);
    CUmemLocation here = props.location;
    CUmemAccess_flags pool_access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CK(cuMemPoolGetAccess(&pool_access, pool, &here));
    printf("vmm_pools pool access of its device=%d\n", (int)pool_access);

    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    size_t sizes[3] = {1u << 20, (5u << 20) + 4096, 300000};
    CUdeviceptr d[3];
    for (int i = 0; i < 3; i++) {
        size_t n = sizes[i] / 4;
        unsigned *host = malloc(sizes[i]), *want = malloc(sizes[i]), *back = malloc(sizes[i]);
        if (!host || !want || !back) die("malloc");
        fill(host, n, (unsigned)i + 5);
        memcpy(want, host, sizes[i]);
        CK(cuMemAllocFromPoolAsync(&d[i], sizes[i], pool, stream));
        CK(cuMemcpyHtoDAsync(d[i], host, sizes[i], stream));
        launch(d[i], n, 5, (unsigned)i, stream);
        CK(cuMemcpyDtoHAsync(back, d[i], sizes[i], stream));
        CK(cuStreamSynchronize(stream));
        cpu_scale_add(want, n, 5, (unsigned)i);
        char what[96];
        snprintf(what, sizeof what, "created pool allocation %d (%zu bytes)", i, sizes[i]);
        report(what, back, want, sizes[i]);
        free(host);
        free(want);
        free(back);
    }
    cuuint64_t used = 0;
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    printf("info: created pool used=%llu\n", (unsigned long long)used);

    /* the device's current pool: the created one, then the default again */
    CUmemoryPool current;
    CK(cuDeviceSetMemPool(dev, pool));
    CK(cuDeviceGetMemPool(&current, dev));
    printf("vmm_pools current pool is the created one: %s\n", current == pool ? "yes" : "no");
    CUdeviceptr from_current;
    CK(cuMemAllocAsync(&from_current, 1u << 20, stream));
    CK(cuStreamSynchronize(stream));
    cuuint64_t used_after = 0;
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_after));
    printf("vmm_pools cuMemAllocAsync took from the created pool: %s\n", used_after > used ? "yes" : "no");
    CK(cuMemFreeAsync(from_current, stream));
    /* the CUDA 13 names of the same */
    CUmemoryPool by_location;
    CK(cuMemGetMemPool(&by_location, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    printf("vmm_pools cuMemGetMemPool is the created one: %s\n", by_location == pool ? "yes" : "no");
    CK(cuMemSetMemPool(&here, CU_MEM_ALLOCATION_TYPE_PINNED, fallback));
    CK(cuMemGetDefaultMemPool(&by_location, &here, CU_MEM_ALLOCATION_TYPE_PINNED));
    CK(cuDeviceGetMemPool(&current, dev));
    printf("vmm_pools back to the default: %s %s\n", current == fallback ? "yes" : "no",
           by_location == fallback ? "yes" : "no");

    for (int i = 0; i < 3; i++) CK(cuMemFreeAsync(d[i], stream));
    CK(cuStreamSynchronize(stream));
    CK(cuMemPoolTrimTo(pool, 0));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    printf("vmm_pools created pool used after frees=%llu\n", (unsigned long long)used);
    CK(cuMemPoolDestroy(pool));
    CK(cuStreamDestroy(stream));
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    CUmodule module;
    char *ptx = read_kernel(dir, "vmm_pools", "ptx", NULL);
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&scale_add, module, "scale_add"));
    vmm(dev);
    pools(dev);
    CK(cuModuleUnload(module));
    free(ptx);
    CK(cuCtxDestroy(ctx));
    printf("vmm_pools done\n");
    return 0;
}
