/* What range_map.c offers: a locked, sorted map of address ranges. */
#ifndef IVC_RANGE_MAP_H
#define IVC_RANGE_MAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ivc_cuda_types.h"

struct ivc_range {
    uint64_t base;
    uint64_t size;
    unsigned flags;
    CUmodule module; /* a module's global (gone with the module), or NULL */
    CUcontext context; /* pinned and registered host memory: the context current at allocation */
};

struct ivc_range_map {
    pthread_mutex_t lock;
    struct ivc_range *ranges; /* sorted by base, non-overlapping */
    size_t count;
    size_t capacity;
};

#define IVC_RANGE_MAP_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}

/* A range of size 0 is kept as 1 byte, so that its base is found. Without memory for
 * a bigger table the range is not kept. */
void ivc_range_map_add(struct ivc_range_map *map, uint64_t base, uint64_t size, unsigned flags, CUmodule module);
/* The same, with the context the range was allocated or registered in (and no module). */
void ivc_range_map_add_in(struct ivc_range_map *map, uint64_t base, uint64_t size, unsigned flags, CUcontext context);
/* Removes the range that starts at base, if there is one. */
void ivc_range_map_remove(struct ivc_range_map *map, uint64_t base);
/* Removes every range of the module. */
void ivc_range_map_remove_module(struct ivc_range_map *map, CUmodule module);
/* Whether address lies in a range; the range into *found (if not NULL). */
int ivc_range_map_find(struct ivc_range_map *map, uint64_t address, struct ivc_range *found);
/* In a forked child: empty, with a fresh lock. */
void ivc_range_map_forget(struct ivc_range_map *map);

#endif
