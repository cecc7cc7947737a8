/* What region_place.c offers: moving the region's mapping to where the server's driver sees
 * it, so a pinned host pointer is its own device pointer (docs/protocol.md §2a). */
#ifndef IVC_REGION_PLACE_H
#define IVC_REGION_PLACE_H

#include <stdint.h>

#include "ivc_internal.h"

/* The mapping address pool_device_address asks for, or 0 when the value cannot be one
 * (0, not a multiple of 4096, below pool_offset, or the region would not end below
 * limit). Pure, for the tests. */
uint64_t ivc_region_wanted_base(uint64_t pool_device_address, uint64_t pool_offset, uint64_t size, uint64_t limit);

/* After the header checks: maps the region again at the address pool_device_address asks
 * for and, when the kernel placed it exactly there and its header is the same server's,
 * drops the first mapping (region->base changes). Otherwise keeps the first one and says
 * why once (IVCUDA_DEBUG). 1 when the region now lies at the server's device address. */
int ivc_region_place(struct ivc_region *region);

#endif
