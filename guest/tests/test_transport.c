/* The transport against the in-process fake server (tests/fake_server.c): hello, sync
 * round trips, the cache, ring records with wrap-around, streamed copies both ways,
 * the pool, modules, launches, thread exit, liveness, refusal and fork. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "check.h"
#include "fake_server.h"
#include "hash.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "wait.h"

CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemFreeHost(void *);
CUresult cuMemHostGetFlags(unsigned *, void *);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuPointerGetAttributes(unsigned, int *, void **, CUdeviceptr);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

static void test_hello_and_round_trip(void)
{
    int before_init = 0;
    /* like the real driver: nothing but cuInit (and the local calls) works before it */
    CHECK(cuDeviceGetCount(&before_init) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(fake.calls[IVC_OP_ivc_hello] == 1);
    CHECK(fake.last_hello_pid == (unsigned)getpid());
    char name[64] = "";
    CHECK(cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS && strcmp(name, "Fake GPU") == 0);
    CHECK(cuDeviceGetName(NULL, 10, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(fake.calls[IVC_OP_ivc_hello] == 1); /* one channel per thread: hello once */
}

static void test_cache(void)
{
    int value = 0, before = fake.calls[IVC_OP_cuDeviceGetAttribute];
    CHECK(cuDeviceGetAttribute(&value, 5, 0) == 0 && value == 50);
    CHECK(cuDeviceGetAttribute(&value, 5, 0) == 0 && value == 50);
    CHECK(fake.calls[IVC_OP_cuDeviceGetAttribute] == before + 1);
    CHECK(cuDeviceGetAttribute(&value, 7, 0) == 0 && value == 70);
    CHECK(fake.calls[IVC_OP_cuDeviceGetAttribute] == before + 2);
}

static void round_trip(size_t n, unsigned seed)
{
    uint8_t *out = malloc(n), *back = malloc(n);
    fill(out, n, seed);
    memset(back, 0, n);
    CUdeviceptr d = 0;
    CHECK(cuMemAlloc_v2(&d, n) == CUDA_SUCCESS);
    CHECK(cuMemcpyHtoD_v2(d, out, n) == CUDA_SUCCESS);
    CHECK(memcmp(fake.device + (d - FAKE_DEVICE_BASE), out, n) == 0);
    CHECK(cuMemcpyDtoH_v2(back, d, n) == CUDA_SUCCESS);
    CHECK(memcmp(back, out, n) == 0);
    CHECK(cuMemFree_v2(d) == CUDA_SUCCESS);
    free(out);
    free(back);
}

static void test_copies(void)
{
    int inline_before = fake.calls[IVC_OP_ivc_memcpy_htod_inline];
    int stream_before = fake.calls[IVC_OP_ivc_memcpy_htod_stream];
    int dstream_before = fake.calls[IVC_OP_ivc_memcpy_dtoh_stream];
    round_trip(1, 1);
    round_trip(FAKE_REQUEST_AREA - 64, 2); /* the largest inline copy */
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_inline] == inline_before + 2);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_stream] == stream_before);
    round_trip(FAKE_REQUEST_AREA - 63, 3); /* the smallest streamed one */
    round_trip(FAKE_WINDOW / 2, 4);        /* exactly one slot */
    round_trip(3 * (FAKE_WINDOW / 2) + 1, 5);
    round_trip(1000003, 6); /* odd, many chunks, both slots many times */
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_stream] == stream_before + 4);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_dtoh_stream] == dstream_before + 4);
    uint8_t byte = 0;
    CHECK(cuMemcpyHtoD_v2(0x10, &byte, 1) == CUDA_ERROR_INVALID_VALUE); /* the server's answer */
    CHECK(cuMemcpyHtoD_v2(0x10, &byte, 0) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoH_v2(NULL, FAKE_DEVICE_BASE, 4) == CUDA_ERROR_INVALID_VALUE);
    /* a failed streamed copy still leaves the channel usable */
    static uint8_t big[20000];
    CHECK(cuMemcpyHtoD_v2(0x10, big, sizeof big) == CUDA_ERROR_INVALID_VALUE);
    round_trip(20001, 7);
}

static void test_ring(void)
{
    CUdeviceptr d = 0;
    enum { COUNT = 40, SIZE = 200 };
    CHECK(cuMemAlloc_v2(&d, COUNT * SIZE) == CUDA_SUCCESS);
    uint8_t out[COUNT * SIZE], back[COUNT * SIZE];
    fill(out, sizeof out, 9);
    int pads = fake.pads, queued = fake.calls[IVC_OP_ivc_memcpy_htod_inline_async];
    for (int i = 0; i < COUNT; i++)
        CHECK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SIZE, out + i * SIZE, SIZE, NULL) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoH_v2(back, d, sizeof back) == CUDA_SUCCESS); /* the server drains first */
    CHECK(memcmp(out, back, sizeof out) == 0);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_inline_async] == queued + COUNT);
    CHECK(fake.pads > pads); /* 248-byte records in a 1024-byte ring wrap with PADs */
    /* launches are ring records too */
    int a = 7;
    double b = 2.5;
    char c = 'x';
    void *p = (void *)0x1234;
    void *params[] = {&a, &b, &c, &p};
    CHECK(cuLaunchKernel((CUfunction)FAKE_FUNCTION, 3, 1, 1, 32, 1, 1, 0, NULL, params, NULL) == CUDA_SUCCESS);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(fake.last_launch_grid_x == 3 && fake.last_launch_size == 32);
    CHECK(memcmp(fake.last_launch, &a, 4) == 0 && memcmp(fake.last_launch + 8, &b, 8) == 0
          && fake.last_launch[16] == 'x' && memcmp(fake.last_launch + 24, &p, 8) == 0);
    CHECK(fake.calls[IVC_OP_ivc_param_layout] == 1);
    uint8_t raw[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    size_t raw_size = sizeof raw;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, raw, CU_LAUNCH_PARAM_BUFFER_SIZE, &raw_size, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel((CUfunction)FAKE_FUNCTION, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra) == CUDA_SUCCESS);
    CHECK(cuLaunchKernel((CUfunction)FAKE_FUNCTION, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) == CUDA_SUCCESS);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(fake.calls[IVC_OP_ivc_param_layout] == 1); /* the layout is cached per function */
    CHECK(fake.calls[IVC_OP_ivc_launch] == 3);
    /* records larger than the 1024-byte ring (a server's limit.ring.bytes can be as small as the
     * records it gets) go as requests of the same opcode, answered at once (protocol §6) */
    static uint8_t wide[3000];
    fill(wide, sizeof wide, 3);
    size_t wide_size = sizeof wide;
    void *wide_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, wide, CU_LAUNCH_PARAM_BUFFER_SIZE, &wide_size,
                          CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel((CUfunction)FAKE_FUNCTION, 5, 1, 1, 1, 1, 1, 0, NULL, NULL, wide_extra) == CUDA_SUCCESS);
    CHECK(fake.calls[IVC_OP_ivc_launch] == 4 && fake.last_launch_grid_x == 5);
    CHECK(fake.last_launch_size == sizeof wide && memcmp(fake.last_launch, wide, sizeof wide) == 0);
    CUdeviceptr d2 = 0;
    CHECK(cuMemAlloc_v2(&d2, sizeof wide) == CUDA_SUCCESS);
    int inline_async = fake.calls[IVC_OP_ivc_memcpy_htod_inline_async];
    CHECK(cuMemcpyHtoDAsync_v2(d2, wide, sizeof wide, NULL) == CUDA_SUCCESS);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_inline_async] == inline_async + 1);
    static uint8_t wide_back[sizeof wide];
    CHECK(cuMemcpyDtoH_v2(wide_back, d2, sizeof wide) == CUDA_SUCCESS);
    CHECK(memcmp(wide, wide_back, sizeof wide) == 0);
}

static void test_pool(void)
{
    void *host = NULL;
    CHECK(cuMemHostAlloc(&host, 100000, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS);
    CHECK(ivc_in_pool(host, 100000));
    unsigned flags = 0;
    CHECK(cuMemHostGetFlags(&flags, host) == 0 && flags == CU_MEMHOSTALLOC_DEVICEMAP);
    CUdeviceptr mapped = 0;
    CHECK(cuMemHostGetDevicePointer_v2(&mapped, (uint8_t *)host + 16, 0) == 0 && mapped == 0xB00000000ULL + 16);
    unsigned type = 0;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host) == 0
          && type == CU_MEMORYTYPE_HOST);
    CHECK(cuPointerGetAttribute(&type, 6, (CUdeviceptr)(uintptr_t)host) == CUDA_ERROR_NOT_SUPPORTED);
    /* CONTEXT: the context current at allocation (cudart 11.8's cudaPointerGetAttributes asks
     * it with the others), not the one current when asked; MEMPOOL_HANDLE: NULL */
    CUcontext before = NULL, allocated_in = (CUcontext)(uintptr_t)0x0200000200000002ULL, answered = NULL;
    CHECK(cuCtxGetCurrent(&before) == CUDA_SUCCESS);
    CHECK(cuCtxSetCurrent(allocated_in) == CUDA_SUCCESS);
    void *second = NULL;
    CHECK(cuMemHostAlloc(&second, 64, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS);
    CHECK(cuCtxSetCurrent(before) == CUDA_SUCCESS);
    CHECK(cuPointerGetAttribute(&answered, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)second + 8) == 0
          && answered == allocated_in);
    CHECK(cuPointerGetAttribute(&answered, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)host) == 0
          && answered == before && before != NULL);
    uint64_t pool_handle = 1;
    unsigned memory_type = 0, managed = 1;
    int asked[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                   CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, CU_POINTER_ATTRIBUTE_CONTEXT};
    void *values[] = {&memory_type, &managed, &pool_handle, &answered};
    answered = NULL;
    CHECK(cuPointerGetAttributes(4, asked, values, (CUdeviceptr)(uintptr_t)second) == CUDA_SUCCESS);
    CHECK(memory_type == CU_MEMORYTYPE_HOST && managed == 0 && pool_handle == 0 && answered == allocated_in);
    CHECK(cuMemFreeHost(second) == 0);
    fill(host, 100000, 11);
    CUdeviceptr d = 0;
    CHECK(cuMemAlloc_v2(&d, 100000) == 0);
    int pool_before = fake.calls[IVC_OP_ivc_memcpy_htod_pool];
    CHECK(cuMemcpyHtoD_v2(d, host, 100000) == 0);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_htod_pool] == pool_before + 1);
    CHECK(memcmp(fake.device + (d - FAKE_DEVICE_BASE), host, 100000) == 0);
    memset(host, 0, 100000);
    CHECK(cuMemcpyDtoHAsync_v2(host, d, 100000, NULL) == 0);
    CHECK(cuInit(0) == 0);
    CHECK(fake.calls[IVC_OP_ivc_memcpy_dtoh_pool_async] == 1);
    CHECK(memcmp(fake.device + (d - FAKE_DEVICE_BASE), host, 100000) == 0);
    /* cuMemcpy classifies: device ← pageable host, host ← device, host ← host */
    uint8_t page[300], again[300];
    fill(page, sizeof page, 13);
    CHECK(cuMemcpy(d, (CUdeviceptr)(uintptr_t)page, sizeof page) == 0);
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)again, d, sizeof again) == 0 && memcmp(page, again, sizeof page) == 0);
    memset(again, 0, sizeof again);
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)again, (CUdeviceptr)(uintptr_t)page, sizeof page) == 0
          && memcmp(page, again, sizeof page) == 0);
    CHECK(cuMemFreeHost(host) == 0);
    CHECK(cuMemHostGetFlags(&flags, host) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFreeHost(page) == CUDA_ERROR_INVALID_VALUE);
}

/* Memory registered with cuMemHostRegister is answered by the library as host memory of the
 * context current at registration (no request); DEVICE_POINTER has none (the GPU cannot reach
 * guest pages). A device pointer's MEMPOOL_HANDLE is asked of the server, as its other attributes. */
static void test_registered_and_pool_attributes(void)
{
    static uint8_t pages[3 * 4096];
    CUcontext before = NULL, registered_in = (CUcontext)(uintptr_t)0x0200000300000003ULL, answered = NULL;
    CHECK(cuCtxGetCurrent(&before) == CUDA_SUCCESS);
    CHECK(cuCtxSetCurrent(registered_in) == CUDA_SUCCESS);
    CHECK(cuMemHostRegister_v2(pages + 4096, 8192, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS);
    CHECK(cuCtxSetCurrent(before) == CUDA_SUCCESS);
    int asked_before = fake.calls[IVC_OP_ivc_pointer_attribute];
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)(pages + 4096 + 100);
    unsigned type = 0, managed = 7, mapped = 0;
    int ordinal = -1;
    uint64_t host = 0, device = 5, start = 0, size = 0, pool = 9;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == 0 && type == CU_MEMORYTYPE_HOST);
    CHECK(cuPointerGetAttribute(&answered, CU_POINTER_ATTRIBUTE_CONTEXT, p) == 0 && answered == registered_in);
    CHECK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == 0 && host == p);
    CHECK(cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == 0 && managed == 0);
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == 0 && ordinal == 0);
    CHECK(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, p) == 0 && mapped == 1);
    CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == 0
          && start == (uint64_t)(uintptr_t)(pages + 4096));
    CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == 0 && size == 8192);
    CHECK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p) == 0 && pool == 0);
    /* the last byte is in the range, the byte past it is not */
    CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(uintptr_t)(pages + 4096 + 8191))
              == 0
          && size == 8192);
    CHECK(fake.calls[IVC_OP_ivc_pointer_attribute] == asked_before); /* all answered here */
    /* together: DEVICE_POINTER NULL, the rest as alone */
    int asked[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                   CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
    type = 0, device = 5, answered = NULL, pool = 9;
    void *values[] = {&type, &device, &answered, &pool};
    CHECK(cuPointerGetAttributes(4, asked, values, p) == CUDA_SUCCESS);
    CHECK(type == CU_MEMORYTYPE_HOST && device == 0 && answered == registered_in && pool == 0);
    /* unregistered: no longer the library's to answer */
    CHECK(cuMemHostUnregister(pages + 4096) == CUDA_SUCCESS);
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS);
    CHECK(fake.calls[IVC_OP_ivc_pointer_attribute] == asked_before + 1);
    /* a device allocation's MEMPOOL_HANDLE: the server's answer, its 8 bytes */
    CUdeviceptr d = 0;
    CHECK(cuMemAlloc_v2(&d, 4096) == CUDA_SUCCESS);
    pool = 0;
    CHECK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d + 8) == CUDA_SUCCESS
          && pool == FAKE_MEMPOOL);
    CHECK(fake.calls[IVC_OP_ivc_pointer_attribute] == asked_before + 2);
}

static void test_modules(void)
{
    static char ptx[50000];
    memset(ptx, 'a', sizeof ptx - 1);
    memcpy(ptx, "//ptx", 5);
    CUmodule module = NULL;
    CHECK(cuModuleLoadData(&module, ptx) == CUDA_SUCCESS && module != NULL);
    CHECK(fake.images_received == 1 && fake.last_image_size == sizeof ptx);
    CHECK(fake.last_image_hash == ivc_fnv1a64(ptx, sizeof ptx));
    module = NULL;
    CHECK(cuModuleLoadData(&module, ptx) == CUDA_SUCCESS && module != NULL);
    CHECK(fake.images_received == 1); /* the second load names the image by hash */
    CHECK(fake.calls[IVC_OP_ivc_module_load] == 2);
}

CUresult cuOccupancyMaxPotentialBlockSize(int *, int *, CUfunction, CUoccupancyB2DSize, size_t, int);

static int callback_calls;
static size_t smem_per_block(int block)
{
    callback_calls++;
    return (size_t)block * 64; /* 64 bytes per thread: smem limits big blocks */
}

static void test_occupancy(void)
{
    /* fake: warp size (attribute 10) = 100, SMs (attribute 16) = 160, 1536 threads/SM.
     * Blocks 100..1000: 1500 resident threads at 100, 300 and 500: the larger, 500 (3/SM). */
    int grid = 0, block = 0;
    CUfunction f = (CUfunction)FAKE_FUNCTION;
    CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0) == 0);
    CHECK(block == 500 && grid == 3 * 160);
    CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 400) == 0);
    CHECK(block == 300 && grid == 5 * 160); /* limited to 400: 100 and 300 tie at 1500 */
    /* 64 B/thread of 48 KiB: at most 768 threads by smem; 100→7 blocks (700), 300→2 (600),
     * 700→1 (700), 400→1... the best is 700 (ties 100 and 700 → 700) */
    CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, smem_per_block, 0, 0) == 0);
    CHECK(block == 700 && grid == 160 && callback_calls == 10);
    CHECK(cuOccupancyMaxPotentialBlockSize(NULL, &block, f, NULL, 0, 0) == CUDA_ERROR_INVALID_VALUE);
}

static void *thread_calls(void *unused)
{
    (void)unused;
    round_trip(30001, 17);
    return NULL;
}

static void test_threads(void)
{
    int hellos = fake.calls[IVC_OP_ivc_hello], goodbyes = fake.calls[IVC_OP_ivc_goodbye];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, thread_calls, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    CHECK(fake.calls[IVC_OP_ivc_hello] == hellos + 4);
    CHECK(fake.calls[IVC_OP_ivc_goodbye] == goodbyes + 4); /* each thread released its channel */
}

static CUresult thread_result;
static void *thread_init(void *unused)
{
    (void)unused;
    thread_result = cuInit(0);
    return NULL;
}

static CUresult in_new_thread(void)
{
    pthread_t thread;
    pthread_create(&thread, NULL, thread_init, NULL);
    pthread_join(thread, NULL);
    return thread_result;
}

static unsigned thread_tid;
static void *thread_init_tid(void *unused)
{
    (void)unused;
    thread_tid = (unsigned)gettid();
    thread_result = cuInit(0);
    return NULL;
}

static void test_skips_channel_not_at_rest(void)
{
    /* channel 1 is free but its last request is unanswered: a new thread takes channel 2 */
    uint8_t *one = fake_channel(1), *two = fake_channel(2);
    CHECK(ivc_load64(one + IVC_CH_OWNER) == 0 && ivc_load64(two + IVC_CH_OWNER) == 0);
    uint64_t seq = ivc_load64(one + IVC_CH_REQ_SEQ);
    ivc_store64(one + IVC_CH_REQ_SEQ, seq + 1);
    pthread_t thread;
    pthread_create(&thread, NULL, thread_init_tid, NULL);
    pthread_join(thread, NULL);
    CHECK(thread_result == CUDA_SUCCESS);
    CHECK(ivc_load32(two + IVC_CH_OWNER_TID) == thread_tid && ivc_load32(one + IVC_CH_OWNER_TID) != thread_tid);
    CHECK(ivc_load64(one + IVC_CH_OWNER) == 0);
    ivc_store64(one + IVC_CH_REQ_SEQ, seq);
}

static void test_refusal_and_liveness(void)
{
    fake.refuse_hello = 1;
    CHECK(in_new_thread() == CUDA_ERROR_NOT_INITIALIZED);
    fake.refuse_hello = 0;
    CHECK(in_new_thread() == CUDA_SUCCESS);
    ivc_server_timeout_ns = 200000000ULL;
    fake.frozen = 1;
    CHECK(in_new_thread() == CUDA_ERROR_DEVICE_UNAVAILABLE);
    fake.frozen = 0;
    ivc_server_timeout_ns = 5000000000ULL;
    CHECK(in_new_thread() == CUDA_SUCCESS);
}

static void test_fork(void)
{
    int hellos = fake.calls[IVC_OP_ivc_hello];
    pid_t child = fork();
    if (child == 0) {
        /* a fresh channel with a new token: hello again, then a copy through it */
        int ok = cuInit(0) == CUDA_SUCCESS;
        CUdeviceptr d = 0;
        uint8_t out[5000], back[5000];
        fill(out, sizeof out, 21);
        ok = ok && cuMemAlloc_v2(&d, sizeof out) == 0 && cuMemcpyHtoD_v2(d, out, sizeof out) == 0
             && cuMemcpyDtoH_v2(back, d, sizeof back) == 0 && memcmp(out, back, sizeof out) == 0;
        exit(ok ? 0 : 1);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(fake.calls[IVC_OP_ivc_hello] == hellos + 1 && fake.last_hello_pid == (unsigned)child);
    CHECK(fake.calls[IVC_OP_ivc_process_exit] >= 1); /* the child said so at exit */
    CHECK(cuInit(0) == CUDA_SUCCESS); /* the parent's channel is still its own */
}

int main(void)
{
    const char *path = fake_region_start();
    test_hello_and_round_trip();
    test_cache();
    test_copies();
    test_ring();
    test_pool();
    test_registered_and_pool_attributes();
    test_modules();
    test_occupancy();
    test_threads();
    test_skips_channel_not_at_rest();
    test_refusal_and_liveness();
    test_fork();
    /* the server keeps running: the library's exit handler says process_exit to it */
    unlink(path);
    return check_summary("test_transport");
}
