/* Bulk bytes through the channel's two-slot window (docs/protocol.md §6), between a
 * call's publish and its await: the guest fills slot c % 2 with chunk c and publishes
 * guest_chunk = c + 1; the server publishes server_chunk as it takes (or fills) them, so
 * one slot is filled while the other is copied on the far side. */
#include "call.h"
#include "wait.h"

/* Copies a window chunk. Large chunks go with non-temporal stores where the CPU has
 * them: the data is not read again by this CPU (the GPU DMAs it, or the program reads it
 * later), so skipping the read-for-ownership of every destination line is pure gain.
 * NT stores are weakly ordered: the fence makes them visible before the counter that
 * publishes the chunk. */
#if defined(__x86_64__)
#include <emmintrin.h>
static void copy_chunk(void *to, const void *from, size_t n)
{
    uint8_t *d = to;
    const uint8_t *s = from;
    if (n < 262144) {
        memcpy(d, s, n);
        return;
    }
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t blocks = n / 64;
    for (size_t i = 0; i < blocks; i++, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n % 64);
    _mm_sfence();
}
#else
static void copy_chunk(void *to, const void *from, size_t n)
{
    memcpy(to, from, n);
}
#endif

/* Slot c % 2 is free for chunk c once the server consumed chunk c - 2 (server_chunk >= c - 1). */
static int slot_free(struct ivc_channel *ch, void *argument)
{
    const uint64_t *c = argument;
    return ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) + 1 >= *c;
}

/* Chunk c is in its slot once the server published server_chunk >= c + 1. */
static int slot_filled(struct ivc_channel *ch, void *argument)
{
    const uint64_t *c = argument;
    return ivc_load64(ch->base + IVC_CH_SERVER_CHUNK) >= *c + 1;
}

CUresult ivc_stream_to_server(struct ivc_call *call, const void *source, size_t size)
{
    struct ivc_channel *ch = call->channel;
    size_t half = ch->region->window_size / 2;
    const uint8_t *from = source;
    for (size_t done = 0; done < size;) {
        uint64_t c = ch->chunk;
        size_t n = size - done < half ? size - done : half;
        CUresult r = ivc_wait_until(ch, slot_free, &c, "a window slot", 1);
        if (r != CUDA_SUCCESS)
            return r;
        copy_chunk(ch->window + (c % 2) * half, from + done, n);
        ch->chunk = c + 1;
        ivc_store64(ch->base + IVC_CH_GUEST_CHUNK, c + 1);
        ivc_channel_notify(ch);
        done += n;
    }
    return CUDA_SUCCESS;
}

CUresult ivc_stream_from_server(struct ivc_call *call, void *destination, size_t size)
{
    struct ivc_channel *ch = call->channel;
    size_t half = ch->region->window_size / 2;
    uint8_t *to = destination;
    for (size_t done = 0; done < size;) {
        uint64_t c = ch->chunk;
        size_t n = size - done < half ? size - done : half;
        CUresult r = ivc_wait_until(ch, slot_filled, &c, "a filled window slot", 1);
        if (r != CUDA_SUCCESS)
            return r;
        copy_chunk(to + done, ch->window + (c % 2) * half, n);
        ch->chunk = c + 1;
        ivc_store64(ch->base + IVC_CH_GUEST_CHUNK, c + 1);
        ivc_channel_notify(ch);
        done += n;
    }
    return CUDA_SUCCESS;
}
