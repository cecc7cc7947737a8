/* The call path (docs/protocol.md §4-§6): a call's `in` parameters encoded into its
 * channel's request area, published by req_seq (and the doorbell rung where the server
 * sleeps), the response awaited and decoded; or the answer taken from the process-wide
 * cache; or an asynchronous call queued as a ring record. Bulk bytes between publish and
 * await are window.c's. The channel is given by the session (session.c, ivc_begin):
 * nothing here claims or releases one.
 *
 * Every size is checked as it is written or read: a parameter that does not fit refuses
 * the call (CUDA_ERROR_INVALID_VALUE, the parameter named) before anything is published,
 * and a response that does not decode exactly is CUDA_ERROR_UNKNOWN. */
#include <inttypes.h>

#include "cache.h"
#include "call.h"
#include "call_profile.h"
#include "clock.h"
#include "ivc_api.h"
#include "log.h"
#include "wait.h"

atomic_int ivc_cuinit_succeeded;

/* ---- encoding ------------------------------------------------------------------------ */

static uint8_t *reserve(struct ivc_call *call, size_t size, const char *what)
{
    size_t padded = (size + 7) & ~(size_t)7;
    if (call->overflow != NULL || padded < size || padded > call->capacity - call->length) {
        if (call->overflow == NULL)
            call->overflow = what;
        return NULL;
    }
    uint8_t *p = call->payload + call->length;
    if (padded != size)
        memset(p + size, 0, padded - size);
    call->length += padded;
    return p;
}

void ivc_put_i64(struct ivc_call *call, int64_t value)
{
    uint8_t *p = reserve(call, 8, "a scalar");
    if (p != NULL)
        ivc_write64(p, (uint64_t)value);
}

void ivc_put_u64(struct ivc_call *call, uint64_t value)
{
    uint8_t *p = reserve(call, 8, "a scalar");
    if (p != NULL)
        ivc_write64(p, value);
}

void ivc_put_f32(struct ivc_call *call, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    ivc_put_u64(call, bits);
}

void ivc_put_bytes(struct ivc_call *call, const void *bytes, size_t size)
{
    uint8_t *p = reserve(call, size, "a fixed-size value");
    if (p != NULL)
        memcpy(p, bytes, size);
}

void ivc_put_str(struct ivc_call *call, const char *text)
{
    size_t n = text == NULL ? 0 : strnlen(text, 4096);
    if (text == NULL || n >= 4096) {
        if (call->overflow == NULL)
            call->overflow = text == NULL ? "a NULL string" : "a string longer than 4095 bytes";
        return;
    }
    ivc_put_buf(call, text, n + 1);
}

void ivc_put_buf(struct ivc_call *call, const void *bytes, uint64_t size)
{
    if (bytes == NULL && size != 0) {
        if (call->overflow == NULL)
            call->overflow = "a NULL buffer";
        return;
    }
    ivc_put_u64(call, size);
    if (size > call->capacity) {
        if (call->overflow == NULL)
            call->overflow = "a buffer";
        return;
    }
    uint8_t *p = reserve(call, (size_t)size, "a buffer");
    if (p != NULL && size != 0)
        memcpy(p, bytes, (size_t)size);
}

static CUresult refuse_overflow(struct ivc_call *call)
{
    ivc_log("%s: %s does not fit the %zu-byte request area", call->name, call->overflow, call->capacity);
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- sending -------------------------------------------------------------------------- */

CUresult ivc_publish(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    struct ivc_channel *ch = call->channel;
    uint64_t seq = ch->seq + 1;
    ivc_write32(ch->request, call->opcode);
    ivc_write32(ch->request + 4, (uint32_t)call->length);
    ivc_write64(ch->request + 8, seq);
    ch->seq = seq;
    call->seq = seq;
    if (ivc_profile_on)
        call->published_ns = ivc_now_ns();
    ivc_store64(ch->base + IVC_CH_REQ_SEQ, seq);
    ivc_channel_notify(ch);
    return CUDA_SUCCESS;
}

static int response_arrived(struct ivc_channel *ch, void *argument)
{
    const struct ivc_call *call = argument;
    return ivc_load64(ch->base + IVC_CH_RESP_SEQ) == call->seq;
}

static void no_output_reader(struct ivc_call *call)
{
    (void)call;
}

static _Atomic(ivc_output_pending_fn) output_reader = no_output_reader;

void ivc_call_on_output_pending(ivc_output_pending_fn fn)
{
    atomic_store(&output_reader, fn);
}

static void deliver_output(struct ivc_call *call)
{
    atomic_load(&output_reader)(call);
}

/* A refused call's trace line also shows the first bytes of its request (its arguments as they
 * travelled, §4): what a program passed is often the whole story (a NULL or stale handle). */
static void trace_refused_request(const struct ivc_call *call, int32_t result, uint64_t seq)
{
    char hex[3 * 48 + 1] = "";
    size_t shown = call->length < 48 ? call->length : 48, at = 0;
    for (size_t i = 0; i < shown; i++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%02x%s", call->payload[i], (i % 8 == 7) ? " " : "");
    ivc_trace("%s -> %d (channel %u, seq %" PRIu64 "; request %zu bytes: %s)", call->name, result,
              call->channel->index, seq, call->length, hex);
}

CUresult ivc_await(struct ivc_call *call)
{
    struct ivc_channel *ch = call->channel;
    CUresult r = ivc_wait_until(ch, response_arrived, call, call->name, 1);
    if (r != CUDA_SUCCESS)
        return r;
    int32_t result = (int32_t)ivc_read32(ch->response);
    uint32_t length = ivc_read32(ch->response + 4);
    uint64_t seq = ivc_read64(ch->response + 8);
    if (seq != call->seq || length > ch->region->response_area_size - IVC_MSG_HEADER) {
        ivc_log("%s: malformed response header on channel %u (seq %" PRIu64 " for %" PRIu64 ", payload_len %u)",
                call->name, ch->index, seq, call->seq, length);
        return CUDA_ERROR_UNKNOWN;
    }
    call->response = ch->response + IVC_MSG_HEADER;
    call->response_length = length;
    if (ivc_profile_on)
        ivc_profile_sync(call->opcode, call->name, ivc_now_ns() - call->published_ns);
    if (call->opcode != IVC_OP_ivc_device_output_read && ivc_read32(ch->base + IVC_CH_OUTPUT_PENDING) != 0)
        deliver_output(call); /* before the call returns, as natively */
    if (result != CUDA_SUCCESS && ivc_debug())
        trace_refused_request(call, result, seq);
    else
        ivc_trace("%s -> %d (channel %u, seq %" PRIu64 ")", call->name, result, ch->index, seq);
    if (call->opcode == IVC_OP_cuInit && result == CUDA_SUCCESS)
        atomic_store_explicit(&ivc_cuinit_succeeded, 1, memory_order_release);
    return result;
}

CUresult ivc_sync(struct ivc_call *call)
{
    CUresult r = ivc_publish(call);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_await(call);
}

CUresult ivc_sync_cached(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    size_t length;
    const uint8_t *hit = ivc_cache_find(call->opcode, call->payload, call->length, &length);
    if (hit != NULL) {
        call->response = hit;
        call->response_length = length;
        if (ivc_profile_on)
            ivc_profile_cached(call->opcode, call->name);
        ivc_trace("%s (cached)", call->name);
        return CUDA_SUCCESS;
    }
    call->cache_miss = 1;
    return ivc_sync(call);
}

/* The ring has room for a record ending at `end` (bytes ever written) once the server's
 * ring_head is within `size` of it; the head read is kept, for the next record. */
struct ring_space {
    uint64_t end;
    uint64_t size;
};

static int ring_has_space(struct ivc_channel *ch, void *argument)
{
    const struct ring_space *need = argument;
    ch->ring_head_seen = ivc_load64(ch->base + IVC_CH_RING_HEAD);
    return need->end - ch->ring_head_seen <= need->size;
}

CUresult ivc_async(struct ivc_call *call)
{
    if (call->overflow != NULL)
        return refuse_overflow(call);
    struct ivc_channel *ch = call->channel;
    uint64_t total = IVC_RECORD_HEADER + call->length;
    uint64_t size = ch->region->ring_size;
    if (total > size) {
        /* The server's ring (limit.ring.bytes) is smaller than this record: the call goes as a
         * request instead, which the server runs after everything queued before it, and is
         * answered at once (its error is this call's, not a later one's; protocol §6). The
         * payload is in the request area already. */
        ivc_trace("%s: a %" PRIu64 "-byte record is larger than the %" PRIu64 "-byte ring: sent as a request",
                  call->name, total, size);
        CUresult r = ivc_sync(call);
        if (ivc_response(call))
            r = ivc_finish(call, r);
        return r;
    }
    uint64_t tail = ch->ring_tail;
    uint64_t position = tail & (size - 1);
    uint64_t pad = position + total > size ? size - position : 0;
    /* Reading ring_head pulls in the server's cache line: only when the last value read
     * does not already prove there is room (the head only moves forward). */
    uint64_t waited_ns = 0;
    if (tail + pad + total - ch->ring_head_seen > size) {
        struct ring_space need = {tail + pad + total, size};
        uint64_t started = ivc_profile_on ? ivc_now_ns() : 0;
        CUresult r = ivc_wait_until(ch, ring_has_space, &need, "ring space", 0); /* ring_head raises no interrupt */
        if (r != CUDA_SUCCESS)
            return r;
        if (ivc_profile_on)
            waited_ns = ivc_now_ns() - started;
    }
    if (pad != 0) {
        ivc_write32(ch->ring + position, (uint32_t)pad);
        ivc_write32(ch->ring + position + 4, IVC_OP_PAD);
        if (pad >= IVC_RECORD_HEADER)
            ivc_write64(ch->ring + position + 8, 0);
        tail += pad;
        position = 0;
    }
    uint8_t *record = ch->ring + position;
    ivc_write32(record, (uint32_t)total);
    ivc_write32(record + 4, call->opcode);
    ivc_write64(record + 8, 0);
    memcpy(record + IVC_RECORD_HEADER, call->payload, call->length);
    tail += total;
    ch->ring_tail = tail;
    ivc_store64(ch->base + IVC_CH_RING_TAIL, tail);
    ivc_channel_mark_queued(ch, tail);
    ivc_channel_notify(ch);
    if (ivc_profile_on)
        ivc_profile_queued(call->opcode, call->name, waited_ns);
    ivc_trace("%s (queued)", call->name);
    return CUDA_SUCCESS;
}

/* ---- decoding ------------------------------------------------------------------------- */

int ivc_response(const struct ivc_call *call)
{
    return call->response != NULL && call->response_length > 0;
}

static const uint8_t *take(struct ivc_call *call, size_t size, const char *what)
{
    size_t padded = (size + 7) & ~(size_t)7;
    if (call->malformed != NULL || padded < size || padded > call->response_length - call->position) {
        if (call->malformed == NULL)
            call->malformed = what;
        return NULL;
    }
    const uint8_t *p = call->response + call->position;
    call->position += padded;
    return p;
}

void ivc_get_i32(struct ivc_call *call, int32_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = (int32_t)ivc_read64(p);
}

void ivc_get_u32(struct ivc_call *call, uint32_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = (uint32_t)ivc_read64(p);
}

void ivc_get_u64(struct ivc_call *call, uint64_t *value)
{
    const uint8_t *p = take(call, 8, "a scalar");
    if (p != NULL && value != NULL)
        *value = ivc_read64(p);
}

void ivc_get_f32(struct ivc_call *call, float *value)
{
    const uint8_t *p = take(call, 8, "a float");
    if (p != NULL && value != NULL) {
        uint32_t bits = (uint32_t)ivc_read64(p);
        memcpy(value, &bits, 4);
    }
}

void ivc_get_handle(struct ivc_call *call, void **handle)
{
    const uint8_t *p = take(call, 8, "a handle");
    if (p != NULL && handle != NULL)
        *handle = (void *)(uintptr_t)ivc_read64(p);
}

void ivc_get_bytes(struct ivc_call *call, void *bytes, size_t size)
{
    const uint8_t *p = take(call, size, "a fixed-size value");
    if (p != NULL && bytes != NULL)
        memcpy(bytes, p, size);
}

uint64_t ivc_get_buf(struct ivc_call *call, void *bytes, uint64_t capacity)
{
    uint64_t length = 0;
    ivc_get_u64(call, &length);
    if (call->malformed != NULL)
        return 0;
    if (length > capacity) {
        call->malformed = "a buffer longer than its capacity";
        return 0;
    }
    const uint8_t *p = take(call, (size_t)length, "a buffer");
    if (p != NULL && bytes != NULL && length != 0)
        memcpy(bytes, p, (size_t)length);
    return p != NULL ? length : 0;
}

CUresult ivc_finish(struct ivc_call *call, CUresult result)
{
    if (call->malformed == NULL && call->position != call->response_length)
        call->malformed = "trailing bytes";
    if (call->malformed != NULL) {
        ivc_log("%s: malformed response (%s) on channel %u", call->name, call->malformed,
                call->channel ? call->channel->index : 0);
        return CUDA_ERROR_UNKNOWN;
    }
    if (call->cache_miss && result == CUDA_SUCCESS)
        ivc_cache_put(call->opcode, call->payload, call->length, call->response, call->response_length);
    return result;
}

CUresult ivc_null_argument(const char *function, const char *parameter)
{
    ivc_trace("%s: %s is NULL -> CUDA_ERROR_INVALID_VALUE", function, parameter);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult ivc_unsupported(const char *function, atomic_int *logged)
{
    if (atomic_exchange(logged, 1) == 0)
        ivc_log("%s is not supported by this guest library (CUDA_ERROR_NOT_SUPPORTED)", function);
    return CUDA_ERROR_NOT_SUPPORTED;
}
