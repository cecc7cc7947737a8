/* queries: what a program learns about the driver and device before doing work,
 * error names and strings, function attributes, occupancy, pointer attributes, and
 * the error codes of calls that must fail. Values that legitimately vary between
 * runs or between drivers go on `info:` lines, which the comparison ignores. */
#include "common.h"

#define ATTR(name) { name, #name }
static const struct { CUdevice_attribute attr; const char *name; } attributes[] = {
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
    ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    ATTR(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    ATTR(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    ATTR(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING),
    ATTR(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY),
    ATTR(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS),
    ATTR(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
    ATTR(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
    ATTR(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
};

static const CUresult error_codes[] = {
    CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_READY,
    CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_UNKNOWN,
};

/* A call that must fail: prints which error it got (compared with native), and stops
 * the program if it succeeded. */
static void expect_failure(CUresult r, const char *what)
{
    printf("queries %s -> %s\n", what, r == CUDA_SUCCESS ? "CUDA_SUCCESS (WRONG)" : result_name(r));
    if (r == CUDA_SUCCESS) exit(1);
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);

    /* Before cuInit the device calls must say so. */
    int count = -1;
    expect_failure(cuDeviceGetCount(&count), "cuDeviceGetCount before cuInit");

    CK(cuInit(0));
    int version = 0;
    CK(cuDriverGetVersion(&version));
    printf("info: cuDriverGetVersion %d\n", version);
    printf("queries driver_version_at_least_13000=%s\n", version >= 13000 ? "yes" : "no");
    CK(cuDeviceGetCount(&count));
    printf("queries device_count=%d\n", count);

    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    char name[256];
    CK(cuDeviceGetName(name, sizeof name, dev));
    printf("queries name=%s\n", name);
    CUuuid uuid;
    CK(cuDeviceGetUuid(&uuid, dev));
    printf("queries uuid=");
    for (int i = 0; i < 16; i++) printf("%02x", (unsigned char)uuid.bytes[i]);
    printf("\n");
    char bus[64];
    CK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    printf("queries pci_bus_id=%s\n", bus);
    CUdevice by_bus;
    CK(cuDeviceGetByPCIBusId(&by_bus, bus));
    printf("queries device_by_pci_bus_id=%d\n", (int)by_bus);
    size_t total = 0;
    CK(cuDeviceTotalMem(&total, dev));
    printf("queries total_mem=%zu\n", total);
    for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++) {
        int value = 0;
        CK(cuDeviceGetAttribute(&value, attributes[i].attr, dev));
        printf("queries attribute %s=%d\n", attributes[i].name, value);
    }
    int bogus = 0;
    expect_failure(cuDeviceGetAttribute(&bogus, (CUdevice_attribute)100000, dev), "cuDeviceGetAttribute(100000)");
    expect_failure(cuDeviceGet(&by_bus, count), "cuDeviceGet(device count)");

    for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0]; i++) {
        const char *ename = NULL, *estring = NULL;
        CK(cuGetErrorName(error_codes[i], &ename));
        CK(cuGetErrorString(error_codes[i], &estring));
        printf("queries error %d name=%s string=%s\n", (int)error_codes[i], ename, estring);
    }
    const char *unknown = "untouched";
    CUresult r = cuGetErrorName((CUresult)987654, &unknown);
    printf("queries error 987654 -> %s pointer=%s\n", result_name(r), unknown == NULL ? "NULL" : "set");

    CUcontext ctx;
    CK(cuCtxCreate(&ctx, NULL, 0, dev));
    size_t free_mem = 0, total_mem = 0;
    CK(cuMemGetInfo(&free_mem, &total_mem));
    printf("queries mem_get_info total=%zu free_le_total=%s\n", total_mem, free_mem <= total_mem ? "yes" : "no");
    printf("info: mem_get_info free=%zu\n", free_mem);
    unsigned api_version = 0;
    CK(cuCtxGetApiVersion(ctx, &api_version));
    printf("info: cuCtxGetApiVersion %u\n", api_version);
    CUdevice ctx_dev = -1;
    CK(cuCtxGetDevice(&ctx_dev));
    printf("queries ctx_device=%d\n", (int)ctx_dev);
    size_t stack = 0;
    CK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
    printf("queries limit_stack_size=%zu\n", stack);
    int least = 0, greatest = 0;
    CK(cuCtxGetStreamPriorityRange(&least, &greatest));
    printf("queries stream_priorities least=%d greatest=%d\n", least, greatest);

    void *cubin = read_kernel(dir, "matmul", "cubin", NULL);
    CUmodule module;
    CUfunction fn, missing;
    CK(cuModuleLoadData(&module, cubin));
    CK(cuModuleGetFunction(&fn, module, "matmul"));
    expect_failure(cuModuleGetFunction(&missing, module, "no_such_kernel"), "cuModuleGetFunction(no_such_kernel)");
    static const struct { CUfunction_attribute attr; const char *name; } fattrs[] = {
        ATTR(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), ATTR(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        ATTR(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES), ATTR(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        ATTR(CU_FUNC_ATTRIBUTE_NUM_REGS), ATTR(CU_FUNC_ATTRIBUTE_PTX_VERSION),
        ATTR(CU_FUNC_ATTRIBUTE_BINARY_VERSION),
    };
    for (size_t i = 0; i < sizeof fattrs / sizeof fattrs[0]; i++) {
        int value = 0;
        CK(cuFuncGetAttribute(&value, fattrs[i].attr, fn));
        printf("queries func_attribute %s=%d\n", fattrs[i].name, value);
    }
    int blocks = 0;
    CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, 256, 0));
    printf("queries occupancy blocks_per_sm(256 threads)=%d\n", blocks);
    int min_grid = 0, block = 0;
    CK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, fn, NULL, 0, 0));
    printf("queries occupancy potential min_grid=%d block=%d\n", min_grid, block);

    CUdeviceptr d;
    CK(cuMemAlloc(&d, 1 << 20));
    unsigned memory_type = 0;
    CK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100));
    CUcontext owner = NULL;
    CK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    int ordinal = -1;
    CK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    size_t range = 0;
    CK(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100));
    CUdeviceptr base = 0;
    size_t base_size = 0;
    CK(cuMemGetAddressRange(&base, &base_size, d + 12345));
    printf("queries device_pointer memory_type=%u context_is_ours=%s ordinal=%d range=%zu address_range=%s/%zu\n",
           memory_type, owner == ctx ? "yes" : "no", ordinal, range, base == d ? "base" : "WRONG", base_size);
    void *host = NULL;
    CK(cuMemAllocHost(&host, 65536));
    CK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host));
    printf("queries host_pointer memory_type=%u\n", memory_type);

    CUdeviceptr huge;
    expect_failure(cuMemAlloc(&huge, (size_t)1 << 50), "cuMemAlloc(1 PiB)");
    CK(cuCtxSynchronize());  /* an allocation failure is not sticky */

    CK(cuMemFreeHost(host));
    CK(cuMemFree(d));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(cubin);
    printf("queries done\n");
    return 0;
}
