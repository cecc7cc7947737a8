/* What region_check.c offers: the header checks, the one judgement of whether a mapped
 * region is a usable ivcuda region (docs/protocol.md §2). A unit of its own below region.c
 * and region_place.c: both judge a mapping with it (region.c the first one, region_place.c
 * the one at the server's device address), and the channel attach checks again after a
 * restart, so none of them has to reach into another for it. */
#ifndef IVC_REGION_CHECK_H
#define IVC_REGION_CHECK_H

#include <stddef.h>
#include <stdint.h>

struct ivc_region;

/* Checks a header against the mapped size; on failure writes "FIELD found, expected"
 * into message and returns 0. Reads each field once: the value checked is the value judged. */
int ivc_region_check(const uint8_t *base, size_t mapped, char *message, size_t capacity);

/* ivc_region_check, and on success the layout it checked (channel_count … pool_size) stored in
 * *layout: the values the library then uses are the ones judged, never read again from a header
 * another process of the VM can write between the check and the use. */
int ivc_region_check_layout(const uint8_t *base, size_t mapped, struct ivc_region *layout, char *message,
                            size_t capacity);

#endif
