/* FNV-1a 64: the one hash of the guest library. It names a module image on the wire
 * (module.c; the server keeps images by this hash, so both ends must agree on it) and
 * spreads the answer cache's keys over its buckets (cache.c). A unit of its own so that
 * neither of them reaches into the other for it. */
#include "hash.h"

uint64_t ivc_fnv1a64(const void *bytes, size_t size)
{
    const uint8_t *p = bytes;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
