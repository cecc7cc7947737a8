/* What cache.c offers the call path (call.c), which asks it before a `cached` call and
 * fills it after a success. */
#ifndef IVC_CACHE_H
#define IVC_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The cached response payload for (opcode, request payload), or NULL. */
const uint8_t *ivc_cache_find(uint32_t opcode, const uint8_t *key, size_t key_length, size_t *value_length);
void ivc_cache_put(uint32_t opcode, const uint8_t *key, size_t key_length, const uint8_t *value, size_t value_length);
/* In a forked child: starts empty. */
void ivc_cache_clear(void);

#endif
