/* What region_check.c offers: the header checks, the one judgement of whether a mapped
 * region is a usable ivcuda region (docs/protocol.md §2). A unit of its own below region.c
 * and region_place.c: both judge a mapping with it (region.c the first one, region_place.c
 * the one at the server's device address), and the channel attach checks again after a
 * restart, so none of them has to reach into another for it. */
#ifndef IVC_REGION_CHECK_H
#define IVC_REGION_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Checks a header against the mapped size; on failure writes "FIELD found, expected"
 * into message and returns 0. Reads each field once: the value checked is the value judged. */
int ivc_region_check(const uint8_t *base, size_t mapped, char *message, size_t capacity);

#endif
