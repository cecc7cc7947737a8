/* Library-internal state and helpers shared by the guest's source files. */
#ifndef IVC_INTERNAL_H
#define IVC_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ivc_call.h"
#include "ivc_cuda_types.h"

/* ---- docs/protocol.md §2: header offsets ---- */
#define IVC_MAGIC 0x3130414455435649ULL
#define IVC_HDR_MAGIC 0x000
#define IVC_HDR_PROTOCOL_VERSION 0x008
#define IVC_HDR_HEADER_SIZE 0x00C
#define IVC_HDR_REGION_SIZE 0x010
#define IVC_HDR_SERVER_STATE 0x018
#define IVC_HDR_EPOCH 0x01C
#define IVC_HDR_SERVER_HEARTBEAT 0x020
#define IVC_HDR_HOST_DRIVER_VERSION 0x028
#define IVC_HDR_API_VERSION 0x02C
#define IVC_HDR_FEATURE_BITS 0x030
#define IVC_HDR_API_HASH 0x038
#define IVC_HDR_CHANNEL_COUNT 0x040
#define IVC_HDR_CHANNEL_STRIDE 0x044
#define IVC_HDR_CHANNEL_TABLE_OFFSET 0x048
#define IVC_HDR_REQUEST_AREA_SIZE 0x050
#define IVC_HDR_RESPONSE_AREA_SIZE 0x054
#define IVC_HDR_RING_SIZE 0x058
#define IVC_HDR_WINDOW_SIZE 0x05C
#define IVC_HDR_POOL_OFFSET 0x060
#define IVC_HDR_POOL_SIZE 0x068
#define IVC_HDR_OWNER_TIMEOUT_MS 0x070
#define IVC_HDR_DOORBELL_VECTORS 0x074
#define IVC_HDR_GUEST_HEARTBEAT 0x078
#define IVC_HDR_SERVER_MESSAGE 0x100
#define IVC_HEADER_SIZE 4096u
#define IVC_STATE_READY 1u
#define IVC_FEATURE_DOORBELL 1ULL
#define IVC_FEATURE_POOL_REGISTERED 2ULL

/* ---- §3: channel offsets ---- */
#define IVC_CH_OWNER 0x000
#define IVC_CH_OWNER_PID 0x008
#define IVC_CH_OWNER_TID 0x00C
#define IVC_CH_OWNER_HEARTBEAT 0x010
#define IVC_CH_REQ_SEQ 0x040
#define IVC_CH_RING_TAIL 0x048
#define IVC_CH_GUEST_CHUNK 0x050
#define IVC_CH_GUEST_WAITING 0x058
#define IVC_CH_RESP_SEQ 0x080
#define IVC_CH_RING_HEAD 0x088
#define IVC_CH_SERVER_CHUNK 0x090
#define IVC_CH_SERVER_PARKED 0x098
#define IVC_CH_ATTACHED 0x09C
#define IVC_CH_AREAS 0x100

/* ---- §4: request/response headers ---- */
#define IVC_MSG_HEADER 16u
/* ---- §6: ring record header ---- */
#define IVC_RECORD_HEADER 16u

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
