/* The range maps through which the guest knows its own pointers (memory.c: device
 * allocations and module globals; pinned.c: pool blocks with their flags): sorted,
 * non-overlapping ranges found by binary search under one lock per map. A unit of its
 * own because it is a data structure, not a memory policy. */
#include <stdlib.h>
#include <string.h>

#include "range_map.h"

/* Index of the first range with base > address. */
static size_t upper_bound(const struct ivc_range_map *m, uint64_t address)
{
    size_t low = 0, high = m->count;
    while (low < high) {
        size_t mid = (low + high) / 2;
        if (m->ranges[mid].base <= address)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

static void add(struct ivc_range_map *m, struct ivc_range range)
{
    pthread_mutex_lock(&m->lock);
    if (m->count == m->capacity) {
        size_t capacity = m->capacity ? m->capacity * 2 : 64;
        struct ivc_range *grown = realloc(m->ranges, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&m->lock);
            return;
        }
        m->ranges = grown;
        m->capacity = capacity;
    }
    size_t i = upper_bound(m, range.base);
    memmove(&m->ranges[i + 1], &m->ranges[i], (m->count - i) * sizeof *m->ranges);
    m->ranges[i] = range;
    m->count++;
    pthread_mutex_unlock(&m->lock);
}

void ivc_range_map_add(struct ivc_range_map *m, uint64_t base, uint64_t size, unsigned flags, CUmodule module)
{
    add(m, (struct ivc_range){base, size ? size : 1, flags, module, NULL});
}

void ivc_range_map_add_in(struct ivc_range_map *m, uint64_t base, uint64_t size, unsigned flags, CUcontext context)
{
    add(m, (struct ivc_range){base, size ? size : 1, flags, NULL, context});
}

void ivc_range_map_remove(struct ivc_range_map *m, uint64_t base)
{
    pthread_mutex_lock(&m->lock);
    size_t i = upper_bound(m, base);
    if (i > 0 && m->ranges[i - 1].base == base) {
        memmove(&m->ranges[i - 1], &m->ranges[i], (m->count - i) * sizeof *m->ranges);
        m->count--;
    }
    pthread_mutex_unlock(&m->lock);
}

void ivc_range_map_remove_module(struct ivc_range_map *m, CUmodule module)
{
    pthread_mutex_lock(&m->lock);
    size_t kept = 0;
    for (size_t i = 0; i < m->count; i++)
        if (m->ranges[i].module != module)
            m->ranges[kept++] = m->ranges[i];
    m->count = kept;
    pthread_mutex_unlock(&m->lock);
}

int ivc_range_map_find(struct ivc_range_map *m, uint64_t address, struct ivc_range *found)
{
    pthread_mutex_lock(&m->lock);
    size_t i = upper_bound(m, address);
    int hit = i > 0 && address - m->ranges[i - 1].base < m->ranges[i - 1].size;
    if (hit && found != NULL)
        *found = m->ranges[i - 1];
    pthread_mutex_unlock(&m->lock);
    return hit;
}

void ivc_range_map_forget(struct ivc_range_map *m)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    m->lock = fresh;
    free(m->ranges);
    m->ranges = NULL;
    m->count = m->capacity = 0;
}
