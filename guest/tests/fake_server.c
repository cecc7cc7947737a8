#include "fake_server.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hash.h"
#include "ivc_api.h"
#include "ivc_internal.h"

struct fake_state fake;

static uint8_t *region;
static pthread_t thread;
static atomic_int running;
/* Held by the serving thread while it serves, and by fake_server_hold / fake_server_answer. */
static pthread_mutex_t serving = PTHREAD_MUTEX_INITIALIZER;

struct server_channel {
    uint64_t last_seq;
    uint64_t ring_head;
    uint64_t chunk;
};
static struct server_channel server_channels[FAKE_CHANNELS];
static uint64_t pool_used;
static uint64_t device_used;

void fake_write_header(uint8_t *base, uint64_t region_size)
{
    memset(base, 0, IVC_HEADER_SIZE);
    ivc_write64(base + IVC_HDR_MAGIC, IVC_MAGIC);
    ivc_write32(base + IVC_HDR_PROTOCOL_VERSION, IVC_PROTOCOL_VERSION);
    ivc_write32(base + IVC_HDR_HEADER_SIZE, IVC_HEADER_SIZE);
    ivc_write64(base + IVC_HDR_REGION_SIZE, region_size);
    ivc_write32(base + IVC_HDR_EPOCH, 1);
    ivc_write32(base + IVC_HDR_HOST_DRIVER_VERSION, 13000);
    ivc_write32(base + IVC_HDR_API_VERSION, IVC_API_VERSION);
    ivc_write64(base + IVC_HDR_FEATURE_BITS, IVC_FEATURE_POOL_REGISTERED | fake.extra_features);
    ivc_write32(base + IVC_HDR_DOORBELL_VECTORS, fake.doorbell_vectors);
    ivc_write64(base + IVC_HDR_API_HASH, IVC_API_HASH);
    ivc_write32(base + IVC_HDR_CHANNEL_COUNT, FAKE_CHANNELS);
    ivc_write32(base + IVC_HDR_CHANNEL_STRIDE, FAKE_STRIDE);
    ivc_write64(base + IVC_HDR_CHANNEL_TABLE_OFFSET, FAKE_CHANNEL_TABLE);
    ivc_write32(base + IVC_HDR_REQUEST_AREA_SIZE, FAKE_REQUEST_AREA);
    ivc_write32(base + IVC_HDR_RESPONSE_AREA_SIZE, FAKE_RESPONSE_AREA);
    ivc_write32(base + IVC_HDR_RING_SIZE, FAKE_RING);
    ivc_write32(base + IVC_HDR_WINDOW_SIZE, FAKE_WINDOW);
    ivc_write64(base + IVC_HDR_POOL_OFFSET, FAKE_POOL_OFFSET);
    ivc_write64(base + IVC_HDR_POOL_SIZE, FAKE_POOL_SIZE);
    ivc_write32(base + IVC_HDR_OWNER_TIMEOUT_MS, 5000);
    ivc_write32(base + IVC_HDR_SERVER_STATE, IVC_STATE_READY);
}

/* ---- payload reading/writing (§5) ---- */

struct reader {
    const uint8_t *p;
    size_t length;
    size_t position;
    int bad;
};

static uint64_t r_u64(struct reader *r)
{
    if (r->position + 8 > r->length) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = ivc_read64(r->p + r->position);
    r->position += 8;
    return v;
}

static const uint8_t *r_buf(struct reader *r, uint64_t *length)
{
    *length = r_u64(r);
    size_t padded = (*length + 7) & ~7ULL;
    if (r->bad || r->position + padded > r->length) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->position;
    r->position += padded;
    return p;
}

struct writer {
    uint8_t *p;
    size_t length;
};

static void w_u64(struct writer *w, uint64_t v)
{
    ivc_write64(w->p + w->length, v);
    w->length += 8;
}

static void w_buf(struct writer *w, const void *bytes, uint64_t length)
{
    w_u64(w, length);
    memcpy(w->p + w->length, bytes, length);
    size_t padded = (length + 7) & ~7ULL;
    memset(w->p + w->length + length, 0, padded - length);
    w->length += padded;
}

static uint8_t *channel_base(int i)
{
    return FAKE_CHANNEL(region, i);
}

static uint8_t *device_at(uint64_t address, uint64_t size)
{
    if (address < FAKE_DEVICE_BASE || address - FAKE_DEVICE_BASE + size > FAKE_DEVICE_SIZE)
        return NULL;
    return fake.device + (address - FAKE_DEVICE_BASE);
}

static void wait_guest_chunk(uint8_t *ch, uint64_t at_least)
{
    while (ivc_load64(ch + IVC_CH_GUEST_CHUNK) < at_least)
        sched_yield();
}

/* §8: store, full fence, load guest_waiting; raise the channel's vector if it is 1. */
static void published(uint8_t *ch, int i)
{
    int count = atomic_load(&fake.interrupt_count);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (count > 0 && ivc_load32(ch + IVC_CH_GUEST_WAITING) == 1) {
        uint64_t one = 1;
        if (write(fake.interrupt_fds[i % count], &one, sizeof one) == sizeof one)
            atomic_fetch_add(&fake.interrupts_raised, 1);
    }
}

/* Host→device through the window: consume every chunk (also when failing, §6). */
static void receive_stream(int i, uint8_t *to, uint64_t size)
{
    uint8_t *ch = channel_base(i);
    uint8_t *window = ch + IVC_CH_AREAS + FAKE_REQUEST_AREA + FAKE_RESPONSE_AREA + FAKE_RING;
    struct server_channel *s = &server_channels[i];
    for (uint64_t done = 0; done < size;) {
        uint64_t c = s->chunk, n = size - done < FAKE_WINDOW / 2 ? size - done : FAKE_WINDOW / 2;
        wait_guest_chunk(ch, c + 1);
        if (to != NULL)
            memcpy(to + done, window + (c % 2) * (FAKE_WINDOW / 2), n);
        s->chunk = c + 1;
        ivc_store64(ch + IVC_CH_SERVER_CHUNK, c + 1);
        published(ch, i);
        done += n;
    }
}

static void send_stream(int i, const uint8_t *from, uint64_t size)
{
    uint8_t *ch = channel_base(i);
    uint8_t *window = ch + IVC_CH_AREAS + FAKE_REQUEST_AREA + FAKE_RESPONSE_AREA + FAKE_RING;
    struct server_channel *s = &server_channels[i];
    for (uint64_t done = 0; done < size;) {
        uint64_t c = s->chunk, n = size - done < FAKE_WINDOW / 2 ? size - done : FAKE_WINDOW / 2;
        wait_guest_chunk(ch, c >= 1 ? c - 1 : 0);
        if (from != NULL)
            memcpy(window + (c % 2) * (FAKE_WINDOW / 2), from + done, n);
        else
            memset(window + (c % 2) * (FAKE_WINDOW / 2), 0, n);
        s->chunk = c + 1;
        ivc_store64(ch + IVC_CH_SERVER_CHUNK, c + 1);
        published(ch, i);
        done += n;
    }
}

/* Runs one operation; returns the CUresult and fills the response payload. */
static int run(int i, uint32_t opcode, struct reader *in, struct writer *out)
{
    if (opcode < 256)
        atomic_fetch_add(&fake.calls[opcode], 1);
    switch (opcode) {
    case IVC_OP_ivc_hello: {
        uint64_t protocol = r_u64(in), hash = r_u64(in), pid = r_u64(in);
        r_u64(in);
        uint64_t n;
        r_buf(in, &n);
        uint64_t capacity = r_u64(in);
        fake.last_hello_pid = (unsigned)pid;
        int refuse = atomic_load(&fake.refuse_hello);
        if (refuse == 2) {
            const char *restarting = "fake server: restarting after a fatal GPU fault; retry";
            w_u64(out, IVC_PROTOCOL_VERSION);
            w_u64(out, IVC_API_HASH);
            w_u64(out, 13000);
            w_buf(out, restarting, strlen(restarting) < capacity ? strlen(restarting) : capacity);
            return CUDA_ERROR_SYSTEM_NOT_READY;
        }
        const char *message = refuse ? "fake server: api hash mismatch" : "fake server";
        w_u64(out, IVC_PROTOCOL_VERSION);
        w_u64(out, refuse ? hash ^ 1 : IVC_API_HASH);
        w_u64(out, 13000);
        w_buf(out, message, strlen(message) < capacity ? strlen(message) : capacity);
        return refuse || protocol != IVC_PROTOCOL_VERSION || hash != IVC_API_HASH ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    }
    case IVC_OP_ivc_goodbye:
    case IVC_OP_ivc_process_exit:
    case IVC_OP_cuInit:
    case IVC_OP_cuDevicePrimaryCtxRelease_v2:
        return CUDA_SUCCESS;
    case IVC_OP_cuCtxSetCurrent:
        atomic_store(&fake.current_context, r_u64(in));
        return CUDA_SUCCESS;
    case IVC_OP_cuKernelGetFunction: /* a kernel's function: the kernel's handle plus the current context's */
        atomic_fetch_add(&fake.per_context_asks, 1);
        w_u64(out, r_u64(in) + atomic_load(&fake.current_context));
        return CUDA_SUCCESS;
    case IVC_OP_cuCtxGetLimit: /* (limit): the limit's number times 10 */
        atomic_fetch_add(&fake.per_context_asks, 1);
        w_u64(out, r_u64(in) * 10);
        return CUDA_SUCCESS;
    case IVC_OP_cuDeviceGet:
    case IVC_OP_cuCtxGetDevice:
    case IVC_OP_cuCtxGetDevice_v2:
        w_u64(out, 0);
        return CUDA_SUCCESS;
    case IVC_OP_cuKernelGetAttribute:
        atomic_fetch_add(&fake.kernel_attribute_gets, 1);
        /* fall through */
    case IVC_OP_cuFuncGetAttribute:
        /* every attribute of every function: one value, 1024 until set (MAX_THREADS_PER_BLOCK is
         * what launches need) */
        w_u64(out, (uint64_t)(atomic_load(&fake.attribute_value) + 1024));
        return CUDA_SUCCESS;
    case IVC_OP_cuFuncSetAttribute: { /* (hfunc, attrib, value) */
        r_u64(in);
        r_u64(in);
        atomic_store(&fake.attribute_value, (int)r_u64(in) - 1024);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuKernelSetAttribute: { /* (attrib, val, kernel, dev) */
        atomic_fetch_add(&fake.kernel_attribute_sets, 1);
        if (atomic_load(&fake.refuse_kernel_attribute_sets))
            return CUDA_ERROR_INVALID_VALUE;
        r_u64(in);
        atomic_store(&fake.attribute_value, (int)r_u64(in) - 1024);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuOccupancyMaxActiveBlocksPerMultiprocessor:
    case IVC_OP_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: {
        r_u64(in);
        uint64_t block = r_u64(in), smem = r_u64(in);
        /* 1536 threads per SM, and 48 KiB of shared memory */
        uint64_t by_threads = 1536 / block, by_smem = smem ? 49152 / smem : by_threads;
        w_u64(out, by_threads < by_smem ? by_threads : by_smem);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuDevicePrimaryCtxRetain:
        w_u64(out, 0x0100000100000001ULL);
        atomic_store(&fake.primary_active, 1);
        return CUDA_SUCCESS;
    case IVC_OP_cuCtxGetCurrent: {
        uint64_t set = atomic_load(&fake.current_context);
        w_u64(out, set != 0 ? set : 0x0100000100000001ULL); /* else the primary context is current */
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuCtxDestroy_v2:
    case IVC_OP_cuDevicePrimaryCtxReset_v2:
        return CUDA_SUCCESS;
    case IVC_OP_cuDevicePrimaryCtxGetState:
        r_u64(in);
        w_u64(out, 0);
        w_u64(out, (uint64_t)atomic_load(&fake.primary_active));
        return CUDA_SUCCESS;
    case IVC_OP_ivc_export_integrity_check: {
        /* a stand-in answer that shows both arguments arrived */
        uint64_t version = r_u64(in), seconds = r_u64(in);
        w_u64(out, version * 1000003u ^ seconds);
        w_u64(out, ~seconds);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuDeviceGetCount:
        w_u64(out, 1);
        return CUDA_SUCCESS;
    case IVC_OP_cuDeviceGetAttribute: {
        int64_t attribute = (int64_t)r_u64(in), device = (int64_t)r_u64(in);
        w_u64(out, (uint64_t)(attribute * 10 + device));
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuDeviceGetName: {
        int64_t capacity = (int64_t)r_u64(in);
        r_u64(in);
        const char *name = "Fake GPU";
        w_buf(out, name, capacity < 9 ? (uint64_t)capacity : 9);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_mem_alloc: {
        uint64_t size = r_u64(in);
        uint64_t aligned = (size + 255) & ~255ULL;
        if (device_used + aligned > FAKE_DEVICE_SIZE)
            return CUDA_ERROR_OUT_OF_MEMORY;
        w_u64(out, FAKE_DEVICE_BASE + device_used);
        device_used += aligned;
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_mem_free:
        return CUDA_SUCCESS;
    case IVC_OP_ivc_memcpy_htod_inline:
    case IVC_OP_ivc_memcpy_htod_inline_async: {
        uint64_t dst = r_u64(in);
        r_u64(in);
        uint64_t n;
        const uint8_t *data = r_buf(in, &n);
        uint64_t size = r_u64(in);
        uint8_t *to = device_at(dst, n);
        if (in->bad || to == NULL || n != size)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(to, data, n);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_memcpy_dtoh_inline: {
        uint64_t src = r_u64(in);
        r_u64(in);
        uint64_t size = r_u64(in);
        uint8_t *from = device_at(src, size);
        if (from == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        w_buf(out, from, size);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_memcpy_htod_stream: {
        uint64_t dst = r_u64(in);
        r_u64(in);
        uint64_t size = r_u64(in);
        uint8_t *to = device_at(dst, size);
        receive_stream(i, to, size);
        return to == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    case IVC_OP_ivc_memcpy_dtoh_stream: {
        uint64_t src = r_u64(in);
        r_u64(in);
        uint64_t size = r_u64(in);
        uint8_t *from = device_at(src, size);
        send_stream(i, from, size);
        return from == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    case IVC_OP_ivc_memcpy_htod_pool:
    case IVC_OP_ivc_memcpy_htod_pool_async: {
        uint64_t dst = r_u64(in);
        r_u64(in);
        uint64_t offset = r_u64(in), size = r_u64(in);
        uint8_t *to = device_at(dst, size);
        if (to == NULL || offset + size > FAKE_POOL_SIZE)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(to, region + FAKE_POOL_OFFSET + offset, size);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_memcpy_dtoh_pool:
    case IVC_OP_ivc_memcpy_dtoh_pool_async: {
        uint64_t offset = r_u64(in), src = r_u64(in);
        r_u64(in);
        uint64_t size = r_u64(in);
        uint8_t *from = device_at(src, size);
        if (from == NULL || offset + size > FAKE_POOL_SIZE)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(region + FAKE_POOL_OFFSET + offset, from, size);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_host_alloc: {
        uint64_t size = (r_u64(in) + 4095) & ~4095ULL;
        if (pool_used + size > FAKE_POOL_SIZE)
            return CUDA_ERROR_OUT_OF_MEMORY;
        w_u64(out, pool_used);
        pool_used += size;
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_host_free:
        return CUDA_SUCCESS;
    case IVC_OP_ivc_host_device_pointer:
        w_u64(out, 0xB00000000ULL + r_u64(in));
        return CUDA_SUCCESS;
    case IVC_OP_ivc_library_load:
        atomic_fetch_add(&fake.library_loads, 1);
        /* fall through: the same request, the same images */
    case IVC_OP_ivc_module_load: {
        uint64_t hash = r_u64(in), size = r_u64(in), send = r_u64(in), n;
        const uint8_t *pairs = r_buf(in, &n);
        unsigned count = n / 16 < 16 ? (unsigned)(n / 16) : 16;
        for (unsigned k = 0; pairs != NULL && k < 2 * count; k++)
            fake.load_options[k] = ivc_read64(pairs + 8 * k);
        atomic_store(&fake.load_option_pairs, count);
        if (send) {
            uint8_t *image = malloc(size);
            receive_stream(i, image, size);
            fake.last_image_hash = ivc_fnv1a64(image, size);
            fake.images_received++;
            free(image);
        } else if (hash != fake.last_image_hash) {
            return CUDA_ERROR_NOT_FOUND;
        }
        fake.last_image_size = size;
        w_u64(out, opcode == IVC_OP_ivc_library_load ? 0x1E00000100000001ULL : 0x0200000100000001ULL);
        return fake.last_image_hash == hash ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
    }
    case IVC_OP_ivc_library_enumerate_kernels: { /* kernel i of the library is FAKE_FUNCTION + i */
        uint64_t n = r_u64(in), first = r_u64(in);
        atomic_fetch_add(&fake.enumerate_calls, 1);
        uint64_t ids[512];
        for (uint64_t k = 0; k < n && k < 512; k++)
            ids[k] = FAKE_FUNCTION + first + k;
        w_buf(out, ids, 8 * (n < 512 ? n : 512));
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuModuleGetFunctionCount: /* every module holds one function, as cuFFT's */
        w_u64(out, 1);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_module_enumerate_functions: { /* its function is FAKE_FUNCTION */
        uint64_t n = r_u64(in), first = r_u64(in), id = FAKE_FUNCTION;
        w_buf(out, &id, n >= 1 && first == 0 ? 8 : 0);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_link_create: { /* the "linker" concatenates its inputs */
        fake.link_size = 0;
        uint64_t n;
        const uint8_t *pairs = r_buf(in, &n);
        unsigned count = n / 16 < 16 ? (unsigned)(n / 16) : 16;
        for (unsigned k = 0; pairs != NULL && k < 2 * count; k++)
            fake.link_options[k] = ivc_read64(pairs + 8 * k);
        atomic_store(&fake.link_option_pairs, count);
        w_u64(out, 0x1F00000100000001ULL);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_jit_log_read: {
        uint64_t capacity = r_u64(in), which = r_u64(in), state = r_u64(in);
        if (which > 1)
            return CUDA_ERROR_INVALID_VALUE;
        const char *log = state == 0 ? fake.load_log[which] : fake.link_log[which];
        uint64_t length = strlen(log), n = capacity == 0 ? 0 : (length < capacity - 1 ? length : capacity - 1);
        float wall = 2.5f;
        uint32_t bits;
        memcpy(&bits, &wall, sizeof bits);
        char text[128];
        memcpy(text, log, n);
        text[n] = '\0';
        w_u64(out, length + 1);
        w_u64(out, bits);
        w_buf(out, text, capacity == 0 ? 0 : n + 1);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_link_add_data: {
        r_u64(in);
        r_u64(in);
        uint64_t size = r_u64(in), n;
        r_buf(in, &n);
        if (fake.link_size + size > sizeof fake.link_image)
            return CUDA_ERROR_INVALID_VALUE; /* (the guest has sent its bytes: the test keeps inputs small) */
        receive_stream(i, fake.link_image + fake.link_size, size);
        fake.link_size += size;
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_link_complete:
        w_u64(out, fake.link_size);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_link_read: {
        r_u64(in);
        uint64_t size = r_u64(in);
        send_stream(i, fake.link_image, size);
        return size == fake.link_size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case IVC_OP_ivc_link_destroy:
        atomic_fetch_add(&fake.link_destroys, 1);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_function_name:
        atomic_fetch_add(&fake.name_calls, 1);
        w_buf(out, "_Z4funcv", 9);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_sm_topology: {
        /* three TPCs: GPCs 0, 1, 0; indexes within them 0, 0, 1 */
        r_u64(in);
        atomic_fetch_add(&fake.topology_asks, 1);
        w_u64(out, 3);
        static const uint8_t arrays[6] = {0, 1, 0, 0, 0, 1};
        w_buf(out, arrays, sizeof arrays);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_param_layout: {
        /* kernel(int a, double b, char c, void *p): offsets 0, 8, 16, 24 */
        r_u64(in);
        w_u64(out, 4);
        uint64_t entries[4] = {0ULL << 32 | 4, 8ULL << 32 | 8, 16ULL << 32 | 1, 24ULL << 32 | 8};
        w_buf(out, entries, sizeof entries);
        return CUDA_SUCCESS;
    }
    /* the guest NVML (api/sharing.api): a fake device; memory and processes follow the fake's allocations */
    case IVC_OP_ivc_nvml_init:
        w_u64(out, (uint64_t)atomic_load(&fake.nvml_init_status));
        w_u64(out, atomic_load(&fake.nvml_init_status) == 0 ? 1 : 0);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_nvml_string: {
        uint64_t what = r_u64(in), capacity = r_u64(in);
        static const char *const strings[] = {"580.00.01", "13.580.00.01", "Fake GPU", "GPU-fa4e0000-1111-2222-3333-444455556666",
                                              "00000000:05:00.0"};
        if (what >= sizeof strings / sizeof strings[0]) {
            w_u64(out, 2); /* NVML_ERROR_INVALID_ARGUMENT */
            w_buf(out, "", 0);
            return CUDA_SUCCESS;
        }
        uint64_t n = strlen(strings[what]) + 1;
        w_u64(out, n > capacity ? 7 : 0); /* NVML_ERROR_INSUFFICIENT_SIZE */
        w_buf(out, strings[what], n > capacity ? 0 : n);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_nvml_value: {
        uint64_t what = r_u64(in), arg = r_u64(in);
        w_u64(out, 0);
        w_u64(out, what == 5 ? 42 | 7ULL << 32 : what == 6 ? 9 | 0ULL << 32 : what == 11 ? 0x233310deULL | 0x1234ULL << 32
                                                                             : what * 10 + arg);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_nvml_memory:
        w_u64(out, 0);
        w_u64(out, FAKE_DEVICE_SIZE);
        w_u64(out, 0);
        w_u64(out, FAKE_DEVICE_SIZE - device_used);
        w_u64(out, device_used);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_nvml_processes: {
        uint64_t capacity = r_u64(in);
        uint64_t pair[2] = {atomic_load(&fake.last_hello_pid), device_used};
        int some = device_used > 0;
        w_u64(out, 0);
        w_u64(out, some ? 1 : 0);
        w_buf(out, pair, some && capacity >= 2 ? sizeof pair : 0);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_launch_ex:
    case IVC_OP_ivc_launch: {
        r_u64(in);
        fake.last_launch_grid_x = (unsigned)r_u64(in);
        for (int k = 0; k < 6; k++)
            r_u64(in);
        r_u64(in);
        uint64_t n;
        if (opcode == IVC_OP_ivc_launch_ex) { /* the attributes, as CUDA lays them out */
            const uint8_t *attrs = r_buf(in, &n);
            r_u64(in);
            fake.last_launch_attrs = (unsigned)(n / 72);
            fake.last_launch_attr_id = n >= 72 ? (int)ivc_read32(attrs) : -1;
            fake.last_launch_attr_value = n >= 72 ? (int)ivc_read32(attrs + 8) : -1;
        }
        const uint8_t *params = r_buf(in, &n);
        if (params != NULL && n <= sizeof fake.last_launch) {
            memcpy(fake.last_launch, params, n);
            fake.last_launch_size = (unsigned)n;
        }
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuCtxSynchronize:
        return CUDA_SUCCESS;
    case IVC_OP_ivc_device_output_read: {
        uint64_t capacity = r_u64(in);
        atomic_fetch_add(&fake.output_reads, 1);
        unsigned pos = atomic_load(&fake.output_read_pos), length = atomic_load(&fake.device_output_length);
        unsigned piece = atomic_load(&fake.output_piece);
        uint64_t n = length - pos;
        if (n > capacity)
            n = capacity;
        if (piece != 0 && n > piece)
            n = piece;
        w_u64(out, atomic_exchange(&fake.output_dropped, 0));
        w_u64(out, 0);
        w_buf(out, fake.device_output + pos, n);
        atomic_store(&fake.output_read_pos, pos + (unsigned)n);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuStreamIsCapturing: /* (stream) → ACTIVE while a capture this fake began runs */
        atomic_fetch_add(&fake.is_capturing_asks, 1);
        w_u64(out, (uint64_t)atomic_load(&fake.capturing));
        return CUDA_SUCCESS;
    case IVC_OP_cuStreamBeginCapture_v2:
        atomic_store(&fake.capturing, 1);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_graph_mem_alloc_node: { /* (hGraph, count, entries, entriesSize, allocType, handleTypes,
                                               locationType, locationId, bytesize, descs, descsSize) */
        atomic_fetch_add(&fake.mem_node_calls, 1);
        uint64_t length = 0;
        r_u64(in);
        r_u64(in);
        r_buf(in, &length);
        r_u64(in);
        for (int k = 0; k < 5; k++)
            fake.last_alloc[k] = (int64_t)r_u64(in);
        const uint8_t *descs = r_buf(in, &length);
        fake.last_alloc[5] = (int64_t)length;
        for (int k = 0; k < 3 && descs != NULL && length >= 12; k++)
            fake.last_alloc_desc[k] = (int32_t)ivc_read32(descs + 4 * k);
        w_u64(out, FAKE_ALLOC_NODE);
        w_u64(out, FAKE_GRAPH_ALLOC);
        return CUDA_SUCCESS;
    }
    case IVC_OP_ivc_graph_mem_free_node: { /* (hGraph, count, entries, entriesSize, dptr) */
        atomic_fetch_add(&fake.mem_node_calls, 1);
        uint64_t length = 0;
        r_u64(in);
        r_u64(in);
        r_buf(in, &length);
        r_u64(in);
        fake.last_free_dptr = r_u64(in);
        w_u64(out, FAKE_FREE_NODE);
        return fake.last_free_dptr == FAKE_GRAPH_ALLOC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case IVC_OP_ivc_graph_mem_alloc_node_params: { /* (hNode, capacity): a pinned 4096 bytes on device 0, read-write */
        atomic_fetch_add(&fake.mem_node_calls, 1);
        if (r_u64(in) != FAKE_ALLOC_NODE)
            return CUDA_ERROR_INVALID_VALUE;
        r_u64(in);
        uint64_t outs[7] = {1, 0, 1, 0, 4096, FAKE_GRAPH_ALLOC, 1};
        for (int k = 0; k < 7; k++)
            w_u64(out, outs[k]);
        int32_t desc[3] = {1, 0, 3};
        w_buf(out, desc, sizeof desc);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuGraphMemFreeNodeGetParams:
        atomic_fetch_add(&fake.mem_node_calls, 1);
        if (r_u64(in) != FAKE_FREE_NODE)
            return CUDA_ERROR_INVALID_VALUE;
        w_u64(out, FAKE_GRAPH_ALLOC);
        return CUDA_SUCCESS;
    case IVC_OP_ivc_pointer_attribute: { /* capacity, attribute, ptr → MEMPOOL_HANDLE only */
        uint64_t capacity = r_u64(in), attribute = r_u64(in);
        r_u64(in);
        if ((uint32_t)attribute != 17 || capacity < 8)
            return CUDA_ERROR_NOT_SUPPORTED;
        uint64_t pool = FAKE_MEMPOOL;
        w_buf(out, &pool, 8);
        return CUDA_SUCCESS;
    }
    case IVC_OP_cuStreamEndCapture: /* the captured graph: the same handle every time */
        atomic_store(&fake.capturing, 0);
        r_u64(in);
        w_u64(out, FAKE_CAPTURED_GRAPH);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static int output_pending(void)
{
    return atomic_load(&fake.output_read_pos) < atomic_load(&fake.device_output_length) ||
           atomic_load(&fake.output_dropped) != 0;
}

static void drain_ring(int i, uint64_t tail)
{
    uint8_t *ch = channel_base(i);
    uint8_t *ring = ch + IVC_CH_AREAS + FAKE_REQUEST_AREA + FAKE_RESPONSE_AREA;
    struct server_channel *s = &server_channels[i];
    while (s->ring_head < tail) {
        uint64_t position = s->ring_head % FAKE_RING;
        uint32_t total = ivc_read32(ring + position), opcode = ivc_read32(ring + position + 4);
        if (total < 8 || total % 8 != 0 || position + total > FAKE_RING) {
            fprintf(stderr, "fake server: bad ring record (total %u at %llu)\n", total, (unsigned long long)position);
            abort();
        }
        if (opcode == IVC_OP_PAD) {
            fake.pads++;
        } else {
            static uint8_t scratch[FAKE_RESPONSE_AREA];
            struct reader in = {ring + position + 16, total - 16, 0, 0};
            struct writer out = {scratch, 0};
            run(i, opcode, &in, &out);
        }
        s->ring_head += total;
        ivc_store64(ch + IVC_CH_RING_HEAD, s->ring_head);
    }
}

static void serve(int i)
{
    uint8_t *ch = channel_base(i);
    struct server_channel *s = &server_channels[i];
    uint64_t seq = ivc_load64(ch + IVC_CH_REQ_SEQ);
    uint64_t tail = ivc_load64(ch + IVC_CH_RING_TAIL);
    drain_ring(i, tail);
    if (seq == s->last_seq)
        return;
    uint8_t *request = ch + IVC_CH_AREAS, *response = request + FAKE_REQUEST_AREA;
    uint32_t opcode = ivc_read32(request), length = ivc_read32(request + 4);
    struct reader in = {request + 16, length, 0, 0};
    struct writer out = {response + 16, 0};
    int result = run(i, opcode, &in, &out);
    if (result != CUDA_SUCCESS && opcode != IVC_OP_ivc_hello)
        out.length = 0; /* §4: a failure carries no payload (hello's refusal does) */
    ivc_write32(response, (uint32_t)result);
    ivc_write32(response + 4, (uint32_t)out.length);
    ivc_write64(response + 8, seq);
    ivc_write32(ch + IVC_CH_OUTPUT_PENDING, output_pending() ? 1 : 0);
    s->last_seq = seq;
    int delay = atomic_load(&fake.response_delay_us);
    if (delay > 0)
        usleep((useconds_t)delay);
    ivc_store64(ch + IVC_CH_RESP_SEQ, seq);
    published(ch, i);
}

static void *server_main(void *unused)
{
    (void)unused;
    while (atomic_load(&running)) {
        if (atomic_load(&fake.frozen)) {
            usleep(1000);
            continue;
        }
        __atomic_fetch_add((uint64_t *)(region + IVC_HDR_SERVER_HEARTBEAT), 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&serving);
        for (int i = 0; i < FAKE_CHANNELS; i++) {
            ivc_store32(channel_base(i) + IVC_CH_SERVER_PARKED, (uint32_t)atomic_load(&fake.parked));
            if (!atomic_load(&fake.holding) && ivc_load64(channel_base(i) + IVC_CH_OWNER) != 0)
                serve(i);
        }
        pthread_mutex_unlock(&serving);
        sched_yield();
    }
    return NULL;
}

void fake_server_start(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, FAKE_REGION_SIZE) != 0) {
        perror(path);
        exit(2);
    }
    region = mmap(NULL, FAKE_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (region == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    fake_write_header(region, FAKE_REGION_SIZE);
    fake.device = calloc(1, FAKE_DEVICE_SIZE);
    atomic_store(&running, 1);
    pthread_create(&thread, NULL, server_main, NULL);
}

void fake_server_hold(int hold)
{
    pthread_mutex_lock(&serving);
    atomic_store(&fake.holding, hold);
    pthread_mutex_unlock(&serving);
}

void fake_server_answer(int i)
{
    pthread_mutex_lock(&serving);
    serve(i);
    pthread_mutex_unlock(&serving);
}

uint8_t *fake_channel(int i)
{
    return channel_base(i);
}

void fake_server_restart(void)
{
    atomic_store(&fake.frozen, 1);
    usleep(20000); /* the serving thread finishes the request it is in */
    ivc_store32(region + IVC_HDR_SERVER_STATE, IVC_STATE_INIT);
    for (int i = 0; i < FAKE_CHANNELS; i++) {
        memset(channel_base(i), 0, IVC_CH_AREAS);
        memset(&server_channels[i], 0, sizeof server_channels[i]);
    }
    atomic_store(&fake.refuse_hello, 0);
    ivc_write32(region + IVC_HDR_EPOCH, ivc_read32(region + IVC_HDR_EPOCH) + 1);
    ivc_store32(region + IVC_HDR_SERVER_STATE, IVC_STATE_READY);
    atomic_store(&fake.frozen, 0);
}

void fake_server_stop(void)
{
    atomic_store(&running, 0);
    pthread_join(thread, NULL);
}

const char *fake_region_start(void)
{
    static char path[] = "/tmp/ivcuda-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("fake_region_start: mkstemp");
        exit(1);
    }
    close(fd);
    fake_server_start(path);
    setenv("IVCUDA_REGION", path, 1);
    return path;
}
