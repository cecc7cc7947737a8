/* Export table da9151d3 (asked by libnvrtc.so.13; 56 bytes: size word + 6 slots): the driver's
 * compute cache as NVRTC uses it. Established from the driver-580 trace (docs/export-tables.md,
 * "da9151d3"): NVRTC makes a cache key of what it compiles (slot 1), looks it up (slot 3: 0 and
 * the cached output, or CUDA_ERROR_NOT_FOUND), on a miss compiles in its own process and stores
 * the result (slot 4), frees what a hit handed out (slot 6) and drops the key (slot 2).
 * libnvrtc's own messages say the same ("[nvrtc cache] ... generate cache key", "found in
 * compute cache").
 *
 * The guest answers every lookup with a miss and keeps nothing, so NVRTC always compiles in the
 * guest, exactly as with the driver's cache empty or disabled (CUDA_CACHE_DISABLE). The host's
 * cache is not offered: it is shared by everything on the host, so a hit would tell one VM
 * what another compiled, and a store would let a guest fill the host's disk. */
#include <stdint.h>
#include <stdlib.h>

#include "export_tables.h"
#include "ivc_internal.h"
#include "log.h"

/* A key: guest memory only; the magic lets slot 2 refuse what slot 1 did not make. */
#define KEY_MAGIC 0x69766343616368ULL /* "ivcCach" */
struct cache_key {
    uint64_t magic;
};

/* Slot 1: (key *, kind (2: the PTX, 1: the cubin), input, input size, options, host tag, build
 * date, target SM, flag). The input is the NVVM IR both times NVRTC compiles (the trace: same
 * address and size); the kind says which output the key is for. Only the key is an output. */
CUresult ivc_compile_cache_key(void **key, int kind, const void *input, size_t size, const char *options)
{
    if (key == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct cache_key *k = malloc(sizeof *k);
    if (k == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    k->magic = KEY_MAGIC;
    *key = k;
    ivc_trace("compute cache slot 1 (kind %d, %zu bytes at %p, options \"%.60s\") -> key %p", kind, size, input,
              options != NULL ? options : "", (void *)k);
    return CUDA_SUCCESS;
}

/* Slot 2: (key). */
CUresult ivc_compile_cache_drop(void *key)
{
    struct cache_key *k = key;
    if (k == NULL || k->magic != KEY_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    ivc_trace("compute cache slot 2 (%p) -> 0", key);
    k->magic = 0;
    free(k);
    return CUDA_SUCCESS;
}

/* Slot 3: (key, ?, void **data, uint32_t *size, ...). Always a miss, outputs untouched, as the
 * driver answers a key it has not stored (CUDA_ERROR_NOT_FOUND, measured). */
CUresult ivc_compile_cache_lookup(void *key, uintptr_t unknown, void **data, uint32_t *size)
{
    (void)unknown;
    (void)data;
    (void)size;
    ivc_trace("compute cache slot 3 (%p) -> %d (a miss: NVRTC compiles itself)", key, CUDA_ERROR_NOT_FOUND);
    return CUDA_ERROR_NOT_FOUND;
}

/* Slot 4: (key, ?, const void *data, size_t size): stores NVRTC's output; kept nowhere. */
CUresult ivc_compile_cache_store(void *key, uintptr_t unknown, const void *data, size_t size)
{
    (void)unknown;
    ivc_trace("compute cache slot 4 (%p, %zu bytes at %p) -> 0 (not kept)", key, size, data);
    return CUDA_SUCCESS;
}

/* Slot 6: (data, ?, size, size): frees what a hit (slot 3) handed out. Slot 3 never hands out
 * anything here, so there is nothing this could free: a call means the reading of the trace is
 * wrong, which IVCUDA_DEBUG says. */
CUresult ivc_compile_cache_free(void *data, uintptr_t unknown, size_t size)
{
    (void)unknown;
    if (data != NULL && ivc_debug())
        ivc_log("compute cache slot 6 called with %p (%zu bytes), which slot 3 never handed out: "
                "left alone (docs/export-tables.md, da9151d3)", data, size);
    return CUDA_SUCCESS;
}
