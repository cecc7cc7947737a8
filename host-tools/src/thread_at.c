/* thread_at.h: a thread whose pthread_self() is a chosen address. */
#define _GNU_SOURCE
#include "thread_at.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096ull
#define STACK_BYTES THREAD_AT_STACK_BYTES /* for measuring */
#define MAX_PLACES 64

struct start {
    void (*fn)(void *);
    void *arg;
    uint64_t want; /* 0: only measure */
    uint64_t got;
};

static void *starter(void *p)
{
    struct start *s = p;
    s->got = (uint64_t)(uintptr_t)pthread_self();
    if (s->want && s->got == s->want) s->fn(s->arg);
    return NULL;
}

static int run_on(void *stack, uint64_t bytes, struct start *s)
{
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr) != 0) return -1;
    int rc = pthread_attr_setstack(&attr, stack, bytes);
    if (rc == 0) rc = pthread_create(&th, &attr, starter, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_join(th, NULL);
    return 0;
}

/* top of the stack - pthread_self(), measured once with a page-aligned top */
static uint64_t top_to_self;

static int measure(char *err, size_t errlen)
{
    if (top_to_self) return 0;
    void *m = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "thread_at: no memory for the measuring thread: %s", strerror(errno));
        return -1;
    }
    struct start s = { 0 };
    if (run_on(m, STACK_BYTES, &s) != 0) {
        snprintf(err, errlen, "thread_at: the measuring thread: %s", strerror(errno));
        munmap(m, STACK_BYTES);
        return -1;
    }
    munmap(m, STACK_BYTES);
    top_to_self = (uint64_t)(uintptr_t)m + STACK_BYTES - s.got;
    return 0;
}

/* mappings made for earlier threads: a second thread at the same address reuses its own */
static struct {
    uint64_t lo, hi;
} places[MAX_PLACES];
static unsigned place_count;

static int map_range(uint64_t lo, uint64_t hi, char *err, size_t errlen)
{
    for (unsigned i = 0; i < place_count; i++)
        if (places[i].lo == lo && places[i].hi == hi) return 0;
    /* a place of ours that overlaps (another stack size at the same address): no thread runs
     * on it any more (every thread was joined), so it goes */
    for (unsigned i = 0; i < place_count;) {
        if (places[i].lo < hi && lo < places[i].hi) {
            munmap((void *)(uintptr_t)places[i].lo, places[i].hi - places[i].lo);
            places[i] = places[--place_count];
        } else {
            i++;
        }
    }
    /* full: one place goes (its thread was joined, as every one was): a long-lived
     * caller such as the integrity oracle asks for any number of places over time */
    if (place_count == MAX_PLACES) {
        munmap((void *)(uintptr_t)places[0].lo, places[0].hi - places[0].lo);
        places[0] = places[--place_count];
    }
    void *m = mmap((void *)(uintptr_t)lo, hi - lo, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == MAP_FAILED || (uint64_t)(uintptr_t)m != lo) {
        if (m != MAP_FAILED) munmap(m, hi - lo); /* a kernel without MAP_FIXED_NOREPLACE */
        snprintf(err, errlen, "thread_at: [%llx, %llx) is taken in this process", (unsigned long long)lo,
                 (unsigned long long)hi);
        return -1;
    }
    places[place_count].lo = lo;
    places[place_count].hi = hi;
    place_count++;
    return 0;
}

int thread_at_run(uint64_t self, void (*fn)(void *), void *arg, char *err, size_t errlen)
{
    return thread_at_run_sized(self, THREAD_AT_STACK_BYTES, fn, arg, err, errlen);
}

int thread_at_run_sized(uint64_t self, uint64_t stack_bytes, void (*fn)(void *), void *arg, char *err,
                        size_t errlen)
{
    if (measure(err, errlen) != 0) return -1;
    if (stack_bytes < 65536 || stack_bytes % PAGE) {
        snprintf(err, errlen, "thread_at: a stack of %llu bytes", (unsigned long long)stack_bytes);
        return -1;
    }
    uint64_t top = self + top_to_self;
    uint64_t lo = (top - stack_bytes) & ~(PAGE - 1), hi = (top + PAGE - 1) & ~(PAGE - 1);
    if (self < stack_bytes || top < self) {
        snprintf(err, errlen, "thread_at: %llx is no place for a thread", (unsigned long long)self);
        return -1;
    }
    if (map_range(lo, hi, err, errlen) != 0) return -1;
    struct start s = { .fn = fn, .arg = arg, .want = self };
    if (run_on((void *)(uintptr_t)(top - stack_bytes), stack_bytes, &s) != 0) {
        snprintf(err, errlen, "thread_at: pthread_create: %s", strerror(errno));
        return -1;
    }
    if (s.got != self) {
        snprintf(err, errlen, "thread_at: glibc put the thread at %llx, not %llx (alignment)",
                 (unsigned long long)s.got, (unsigned long long)self);
        return -1;
    }
    return 0;
}
