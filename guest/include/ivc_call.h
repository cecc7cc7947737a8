/* The encoder/decoder the generated stubs (ivc_stubs.c) and the hand-written custom
 * functions use: one call = put the `in` params in order (docs/protocol.md §5), send
 * (sync, cached or ring), get the `out` params in order, finish. */
#ifndef IVC_CALL_H
#define IVC_CALL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ivc_cuda_types.h"

#define IVC_EXPORT __attribute__((visibility("default")))
/* Makes `other_name` another exported name of the function `target` (same TU). */
#define IVC_ALIAS(other_name, target) \
    extern __typeof__(target) other_name __attribute__((alias(#target), visibility("default")));

struct ivc_channel;

struct ivc_call {
    struct ivc_channel *channel;
    const char *name;
    uint32_t opcode;
    uint8_t *payload;        /* request payload in the channel's request area */
    size_t length;           /* bytes encoded so far */
    size_t capacity;         /* request_area_size - 16 */
    const char *overflow;    /* the parameter that did not fit, or NULL */
    const uint8_t *response; /* response payload (channel or cache) */
    size_t response_length;
    size_t position;
    const char *malformed;   /* what in the response was wrong, or NULL */
    uint64_t seq;
    int cache_miss;          /* insert into the cache at finish */
    uint64_t published_ns;   /* when the request was published (IVCUDA_STATS only) */
};

CUresult ivc_begin(struct ivc_call *call, uint32_t opcode, const char *name);
void ivc_put_i64(struct ivc_call *call, int64_t value);
void ivc_put_u64(struct ivc_call *call, uint64_t value);
void ivc_put_f32(struct ivc_call *call, float value);
void ivc_put_bytes(struct ivc_call *call, const void *bytes, size_t size);
void ivc_put_str(struct ivc_call *call, const char *text);
void ivc_put_buf(struct ivc_call *call, const void *bytes, uint64_t size);

/* Send: request/response; or answered from the process-wide cache; or a ring record. */
CUresult ivc_sync(struct ivc_call *call);
CUresult ivc_sync_cached(struct ivc_call *call);
CUresult ivc_async(struct ivc_call *call);
/* The two halves of ivc_sync, for streamed copies that send chunks in between. */
CUresult ivc_publish(struct ivc_call *call);
CUresult ivc_await(struct ivc_call *call);
/* Streamed bytes through the channel's two-slot window (§6), after ivc_publish. */
CUresult ivc_stream_to_server(struct ivc_call *call, const void *source, size_t size);
CUresult ivc_stream_from_server(struct ivc_call *call, void *destination, size_t size);

/* Whether a response payload is there to decode (success, or a refusal that carries one). */
int ivc_response(const struct ivc_call *call);
/* Each getter accepts NULL (an `outopt` the caller left out): the value is skipped. */
void ivc_get_i32(struct ivc_call *call, int32_t *value);
void ivc_get_u32(struct ivc_call *call, uint32_t *value);
void ivc_get_u64(struct ivc_call *call, uint64_t *value);
void ivc_get_f32(struct ivc_call *call, float *value);
void ivc_get_handle(struct ivc_call *call, void **handle);
void ivc_get_bytes(struct ivc_call *call, void *bytes, size_t size);
/* A u64-length buffer of at most `capacity` bytes; returns its length. */
uint64_t ivc_get_buf(struct ivc_call *call, void *bytes, uint64_t capacity);
/* Checks the response decoded exactly; a malformed one becomes CUDA_ERROR_UNKNOWN. */
CUresult ivc_finish(struct ivc_call *call, CUresult result);

/* An `out` pointer the caller passed as NULL: CUDA_ERROR_INVALID_VALUE (traced). */
CUresult ivc_null_argument(const char *function, const char *parameter);
/* A name that resolves but is not remoted: one log line per name, NOT_SUPPORTED. */
CUresult ivc_unsupported(const char *function, atomic_int *logged);

#endif
