/* FNV-1a 64: the one hash of the guest library. It names a module image on the wire
 * (module.c: the server keeps images by this hash, so both ends must agree on it) and
 * spreads the answer cache's keys over its buckets (cache.c). */
#ifndef IVC_HASH_H
#define IVC_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t ivc_fnv1a64(const void *bytes, size_t size);

#endif
