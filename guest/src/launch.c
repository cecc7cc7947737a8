/* Kernel launches: the guest only has `void **kernelParams`, so it asks the server for
 * the function's parameter layout once (entries `offset << 32 | size`), packs the
 * values into one buffer and queues `ivc_launch` in the ring. Also the occupancy
 * calculator, computed here from cached per-block-size answers. */
#include <pthread.h>
#include <stdlib.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "channel.h"
#include "launch.h"
#include "log.h"

#define MAX_PARAMS 1024
#define MAX_PARAM_BYTES 32768

struct layout {
    struct layout *next;
    CUfunction function;
    uint32_t count;
    uint64_t entries[];
};

static pthread_mutex_t layouts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct layout *layouts;

void ivc_launch_forget_process(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    layouts_lock = fresh;
    while (layouts != NULL) {
        struct layout *next = layouts->next;
        free(layouts);
        layouts = next;
    }
}

static CUresult get_layout(CUfunction f, const struct layout **out)
{
    pthread_mutex_lock(&layouts_lock);
    for (struct layout *l = layouts; l != NULL; l = l->next) {
        if (l->function == f) {
            pthread_mutex_unlock(&layouts_lock);
            *out = l;
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&layouts_lock);
    const struct ivc_region *region;
    CUresult r;
    if ((region = ivc_region(&r)) == NULL)
        return r;
    uint32_t capacity = (region->response_area_size - 64) / 8;
    if (capacity > MAX_PARAMS)
        capacity = MAX_PARAMS;
    struct layout *l = calloc(1, sizeof *l + capacity * sizeof(uint64_t));
    if (l == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = ivc_param_layout(&l->count, l->entries, capacity, f);
    if (r == CUDA_SUCCESS && l->count > capacity) {
        ivc_log("kernel with %u parameters: more than the %u this library can pack", l->count, capacity);
        r = CUDA_ERROR_NOT_SUPPORTED;
    }
    for (uint32_t i = 0; r == CUDA_SUCCESS && i < l->count; i++) {
        uint64_t offset = l->entries[i] >> 32, size = l->entries[i] & 0xffffffffu;
        if (offset + size > MAX_PARAM_BYTES) {
            ivc_log("parameter %u of a kernel: offset %llu size %llu beyond %d bytes", i,
                    (unsigned long long)offset, (unsigned long long)size, MAX_PARAM_BYTES);
            r = CUDA_ERROR_UNKNOWN;
        }
    }
    if (r != CUDA_SUCCESS) {
        free(l);
        return r;
    }
    l->function = f;
    pthread_mutex_lock(&layouts_lock);
    l->next = layouts;
    layouts = l;
    pthread_mutex_unlock(&layouts_lock);
    *out = l;
    return CUDA_SUCCESS;
}

/* Packs a launch's parameters (kernelParams by the layout, or extra's buffer) into one buffer:
 * *params and *size, valid until the thread's next launch. */
static CUresult pack(CUfunction f, void **kernelParams, void **extra, const void **out, size_t *out_size)
{
    static _Thread_local uint8_t buffer[MAX_PARAM_BYTES];
    const void *params = buffer;
    size_t size = 0;
    if (kernelParams != NULL) {
        const struct layout *l = NULL;
        CUresult r = get_layout(f, &l);
        if (r != CUDA_SUCCESS)
            return r;
        for (uint32_t i = 0; i < l->count; i++) {
            uint64_t offset = l->entries[i] >> 32, n = l->entries[i] & 0xffffffffu;
            if (kernelParams[i] == NULL)
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(buffer + offset, kernelParams[i], n);
            if (offset + n > size)
                size = offset + n;
        }
    } else if (extra != NULL) {
        const void *pointer = NULL;
        size_t *length = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                pointer = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                length = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (pointer == NULL || length == NULL || *length > MAX_PARAM_BYTES)
            return CUDA_ERROR_INVALID_VALUE;
        params = pointer;
        size = *length;
    }
    *out = params;
    *out_size = size;
    return CUDA_SUCCESS;
}

CUresult ivc_launch_pack(CUfunction f, void **kernelParams, void **extra, const void **params, size_t *size)
{
    return pack(f, kernelParams, extra, params, size);
}

static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared, CUstream stream,
                       void **kernelParams, void **extra)
{
    const void *params = NULL;
    size_t size = 0;
    CUresult r = pack(f, kernelParams, extra, &params, &size);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_launch(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, params,
                      (uint32_t)size);
}

IVC_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    unsigned grid[3] = {gridDimX, gridDimY, gridDimZ}, block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra);
}
IVC_ALIASES_cuLaunchKernel

IVC_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams, void **extra)
{
    unsigned grid[3] = {gridDimX, gridDimY, gridDimZ}, block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream ? hStream : CU_STREAM_PER_THREAD, kernelParams, extra);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra, int ptsz)
{
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    CUstream stream = ptsz && config->hStream == NULL ? CU_STREAM_PER_THREAD : config->hStream;
    if (config->numAttrs == 0)
        return launch(f, grid, block, config->sharedMemBytes, stream, kernelParams, extra);
    /* the attributes travel as CUDA lays them out; the server passes the scalar ones on */
    if (config->attrs == NULL || config->numAttrs > IVC_MAX_LAUNCH_ATTRIBUTES)
        return CUDA_ERROR_INVALID_VALUE;
    const void *params = NULL;
    size_t size = 0;
    CUresult r = pack(f, kernelParams, extra, &params, &size);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_launch_ex(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], config->sharedMemBytes, stream,
                         config->attrs, config->numAttrs * sizeof(CUlaunchAttribute), params, (uint32_t)size);
}

CUresult ivc_launch_config(const CUlaunchConfig *config, CUfunction f, void **kernelParams, int ptsz)
{
    return launch_ex(config, f, kernelParams, NULL, ptsz);
}

IVC_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}
IVC_ALIASES_cuLaunchKernelEx

IVC_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                          void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}

/* ---- occupancy ---- */

static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
                                     CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                     int blockSizeLimit, unsigned flags, int with_flags)
{
    if (minGridSize == NULL || blockSize == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int max_threads = 0, warp = 0, sms = 0;
    CUdevice device = 0;
    CUresult r = cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func);
    if (r == CUDA_SUCCESS)
        r = cuCtxGetDevice(&device);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    if (r != CUDA_SUCCESS)
        return r;
    if (warp <= 0 || max_threads <= 0)
        return CUDA_ERROR_UNKNOWN;
    int limit = blockSizeLimit > 0 && blockSizeLimit < max_threads ? blockSizeLimit : max_threads;
    int best_block = 0, best_blocks = 0;
    long best_threads = -1;
    int first = limit < warp ? limit : warp;
    for (int size = first; size <= limit; size += (size < warp ? limit : warp)) {
        size_t smem = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
        int blocks = 0;
        r = with_flags ? cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, func, size, smem, flags)
                       : cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, func, size, smem);
        if (r != CUDA_SUCCESS)
            return r;
        long threads = (long)blocks * size;
        if (threads >= best_threads) { /* ties: the larger block */
            best_threads = threads;
            best_block = size;
            best_blocks = blocks;
        }
    }
    *blockSize = best_block;
    *minGridSize = best_blocks * sms;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                     CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                     size_t dynamicSMemSize, int blockSizeLimit)
{
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                blockSizeLimit, 0, 0);
}
IVC_ALIASES_cuOccupancyMaxPotentialBlockSize

IVC_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                              CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                              size_t dynamicSMemSize, int blockSizeLimit,
                                                              unsigned int flags)
{
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                blockSizeLimit, flags, 1);
}
IVC_ALIASES_cuOccupancyMaxPotentialBlockSizeWithFlags
