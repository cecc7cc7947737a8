/* FNV-1a 64 (hash.h says who relies on it). */
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
