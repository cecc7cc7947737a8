/* Library-internal state and helpers shared by the guest's source files. */
#ifndef IVC_INTERNAL_H
#define IVC_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ivc_call.h"
#include "ivc_cuda_types.h"

/* The region's layout (docs/protocol.md §2–6): offsets, sizes and named values, generated
 * from api/region.layout into $(GEN). */
#include "ivc_region.h"

static inline uint64_t ivc_load64(const void *p) { return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE); }
static inline uint32_t ivc_load32(const void *p) { return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE); }
static inline void ivc_store64(void *p, uint64_t v) { __atomic_store_n((uint64_t *)p, v, __ATOMIC_RELEASE); }
static inline void ivc_store32(void *p, uint32_t v) { __atomic_store_n((uint32_t *)p, v, __ATOMIC_RELEASE); }
static inline uint64_t ivc_read64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t ivc_read32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void ivc_write64(void *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void ivc_write32(void *p, uint32_t v) { memcpy(p, &v, 4); }

/* The validated layout of the mapped region (read once from the header). */
struct ivc_region {
    uint8_t *base;
    size_t size;
    char path[1200];
    char doorbell_path[1200];     /* BAR0 (resource0) of the PCI device, or "" */
    char pci_address[64];         /* the PCI device's address (0000:00:05.0), or "" for IVCUDA_REGION */
    volatile uint8_t *doorbell;  /* mapped BAR0, or NULL */
    uint32_t doorbell_vectors;
    int doorbell_eventfds[64];    /* host loopback: the server's vector eventfds (IVCUDA_DOORBELL_EVENTFDS) */
    uint32_t doorbell_eventfd_count;
    uint32_t epoch;
    uint32_t api_version;
    uint64_t feature_bits;
    uint32_t channel_count;
    uint32_t channel_stride;
    uint64_t channel_table_offset;
    uint32_t request_area_size;
    uint32_t response_area_size;
    uint32_t ring_size;
    uint32_t window_size;
    uint64_t pool_offset;
    uint64_t pool_size;
};

/* Each unit declares its own functions in its src/<unit>.h. */

#endif
