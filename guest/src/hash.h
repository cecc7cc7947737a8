/* What hash.c offers: FNV-1a 64. */
#ifndef IVC_HASH_H
#define IVC_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t ivc_fnv1a64(const void *bytes, size_t size);

#endif
