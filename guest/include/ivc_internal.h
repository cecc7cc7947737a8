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

/* region.c */
/* Checks a header against the mapped size; on failure writes "FIELD found, expected"
 * into message and returns 0. */
int ivc_region_check(const uint8_t *base, size_t mapped, char *message, size_t capacity);
/* "3,4,5": at most capacity descriptors into fds; their number, or -1 if the list is malformed. */
int ivc_parse_fd_list(const char *list, int *fds, uint32_t capacity);
/* A sysfs number such as vendor (0x1af4): 0 if the file cannot be read as hex. */
int ivc_read_hex_file(const char *path, unsigned long *value);
/* The first PCI device 1af4:1110 under <IVCUDA_SYSFS_ROOT or /sys>/bus/pci/devices whose
 * BAR2 starts with the magic: its sysfs directory and BAR2 mapped. 0 with a message if none. */
int ivc_pci_find(char *device_dir, size_t dir_capacity, uint8_t **base, size_t *size, char *message,
                 size_t capacity);
/* Finds, maps and validates the region (IVCUDA_REGION or the PCI scan). */
CUresult ivc_region_open(struct ivc_region *region);
void ivc_region_close(struct ivc_region *region);
void ivc_region_ring_doorbell(const struct ivc_region *region, uint32_t channel_index);

/* interrupts.c (§8, §8.1): sleeping on a channel's MSI-X vector in doorbell mode */
/* Gets the vector eventfds (daemon socket or IVCUDA_IRQ_EVENTFDS) for an opened region. */
void ivc_interrupts_open(const struct ivc_region *region);
/* Whether a waiter on channel_index may sleep on its vector (one of its own, source alive). */
int ivc_interrupts_usable(uint32_t channel_index, uint32_t channel_count);
/* Takes a count left by an interrupt that came after an earlier sleep ended (before
 * guest_waiting = 1, so that it cannot be the one the next sleep waits for). */
void ivc_interrupts_drain(uint32_t channel_index);
/* Sleeps on the channel's vector up to timeout_ns: 1 interrupt, 0 timeout, -1 source lost. */
int ivc_interrupts_wait(uint32_t channel_index, uint64_t timeout_ns);
void ivc_interrupts_report(void);
void ivc_interrupts_forget_process(void);
void ivc_interrupts_stats(uint64_t *wait_count, uint64_t *woken_count);

/* transport.c */
/* The attached region, or NULL when attaching failed (CUDA_ERROR_NOT_INITIALIZED). */
const struct ivc_region *ivc_region(CUresult *error);
int ivc_in_pool(const void *pointer, size_t size);
uint64_t ivc_pool_offset(const void *pointer);
void *ivc_pool_pointer(uint64_t offset);
/* The largest copy that travels inline in a request or response (§6). */
size_t ivc_inline_limit(void);
/* Whether a ring record carrying `payload` bytes fits in the ring at all. */
int ivc_ring_fits(size_t payload);
/* Drops every piece of per-process state (called in a forked child). */
void ivc_transport_forget_process(void);
/* Tests: shortens the 5 s server liveness limit. */
extern uint64_t ivc_server_timeout_ns;

/* cache.c */
const uint8_t *ivc_cache_find(uint32_t opcode, const uint8_t *key, size_t key_length, size_t *value_length);
void ivc_cache_put(uint32_t opcode, const uint8_t *key, size_t key_length, const uint8_t *value, size_t value_length);
void ivc_cache_clear(void);

/* memory.c: a module's globals count as device memory until the module is unloaded */
void ivc_memory_add_global(CUmodule module, CUdeviceptr base, size_t size);
void ivc_memory_forget_module(CUmodule module);

/* memory.c, module.c, launch.c: per-process state dropped in a forked child */
void ivc_memory_forget_process(void);
void ivc_module_forget_process(void);
void ivc_launch_forget_process(void);

/* module.c: the byte size of a module image (fatbin wrapper, fatbin, ELF, PTX); 0 if unknown */
size_t ivc_image_size(const void *image);
uint64_t ivc_fnv1a64(const void *bytes, size_t size);

/* log.c */
void ivc_log(const char *format, ...) __attribute__((format(printf, 1, 2)));
int ivc_debug(void);
void ivc_trace(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
