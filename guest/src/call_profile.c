/* The call profile (call_profile.h). Counters are per opcode, relaxed atomics: threads of a
 * process add to them concurrently and only the exit report reads them, after the threads'
 * calls are over (a count a still-running thread adds late is simply not shown). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_profile.h"
#include "log.h"

/* The wire's opcodes are below 1024 (the api directory's descriptions); one slot past the end counts any other. */
#define SLOTS 1025

struct slot {
    _Atomic(const char *) name;
    atomic_uint_fast64_t sync_calls, sync_ns, cached, queued, queue_wait_ns;
};

static struct slot slots[SLOTS];
int ivc_profile_on;

__attribute__((constructor)) static void read_setting(void)
{
    const char *v = getenv("IVCUDA_STATS");
    ivc_profile_on = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

static struct slot *slot_of(uint32_t opcode, const char *name)
{
    struct slot *s = &slots[opcode < SLOTS - 1 ? opcode : SLOTS - 1];
    if (atomic_load_explicit(&s->name, memory_order_relaxed) == NULL)
        atomic_store_explicit(&s->name, opcode < SLOTS - 1 ? name : "(other opcodes)", memory_order_relaxed);
    return s;
}

void ivc_profile_sync(uint32_t opcode, const char *name, uint64_t waited_ns)
{
    struct slot *s = slot_of(opcode, name);
    atomic_fetch_add_explicit(&s->sync_calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sync_ns, waited_ns, memory_order_relaxed);
}

void ivc_profile_cached(uint32_t opcode, const char *name)
{
    atomic_fetch_add_explicit(&slot_of(opcode, name)->cached, 1, memory_order_relaxed);
}

void ivc_profile_queued(uint32_t opcode, const char *name, uint64_t waited_ns)
{
    struct slot *s = slot_of(opcode, name);
    atomic_fetch_add_explicit(&s->queued, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->queue_wait_ns, waited_ns, memory_order_relaxed);
}

struct row {
    const char *name;
    uint64_t sync_calls, sync_ns, cached, queued, queue_wait_ns;
};

static int by_wait(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    uint64_t wx = x->sync_ns + x->queue_wait_ns, wy = y->sync_ns + y->queue_wait_ns;
    if (wx != wy)
        return wx < wy ? 1 : -1;
    uint64_t cx = x->sync_calls + x->cached + x->queued, cy = y->sync_calls + y->cached + y->queued;
    return cx < cy ? 1 : cx > cy ? -1 : 0;
}

size_t ivc_profile_format(char *text, size_t capacity, int lines)
{
    static struct row rows[SLOTS];
    size_t n = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        const char *name = atomic_load_explicit(&slots[i].name, memory_order_relaxed);
        if (name == NULL)
            continue;
        rows[n++] = (struct row){name,
                                 atomic_load_explicit(&slots[i].sync_calls, memory_order_relaxed),
                                 atomic_load_explicit(&slots[i].sync_ns, memory_order_relaxed),
                                 atomic_load_explicit(&slots[i].cached, memory_order_relaxed),
                                 atomic_load_explicit(&slots[i].queued, memory_order_relaxed),
                                 atomic_load_explicit(&slots[i].queue_wait_ns, memory_order_relaxed)};
    }
    qsort(rows, n, sizeof rows[0], by_wait);
    size_t at = 0;
    if (capacity == 0)
        return 0;
    text[0] = '\0';
    for (size_t i = 0; i < n && (int)i < lines && at < capacity; i++) {
        const struct row *r = &rows[i];
        char server[96] = "", cached[48] = "", queued[96] = "";
        if (r->sync_calls != 0)
            snprintf(server, sizeof server, "; %" PRIu64 " answered by the server (%.1f us waited, %.2f us each)",
                     r->sync_calls, r->sync_ns / 1e3, r->sync_ns / 1e3 / r->sync_calls);
        if (r->cached != 0)
            snprintf(cached, sizeof cached, "; %" PRIu64 " from the cache", r->cached);
        if (r->queued != 0)
            snprintf(queued, sizeof queued, "; %" PRIu64 " queued (%.1f us waited for ring space)", r->queued,
                     r->queue_wait_ns / 1e3);
        /* the name, then the non-zero parts, the first one's "; " made ": " */
        char parts[256];
        snprintf(parts, sizeof parts, "%s%s%s", server, cached, queued);
        int w = snprintf(text + at, capacity - at, "%s:%s\n", r->name, parts + 1);
        if (w < 0)
            break;
        at += (size_t)w < capacity - at ? (size_t)w : capacity - at - 1;
    }
    return at;
}

void ivc_profile_report(void)
{
    if (!ivc_profile_on)
        return;
    static char text[64 * 1024];
    ivc_profile_format(text, sizeof text, 60);
    ivc_log("call profile (IVCUDA_STATS), the most waited-for first:");
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
        ivc_log("  %s", line);
}

void ivc_profile_forget_process(void)
{
    for (size_t i = 0; i < SLOTS; i++) {
        atomic_store_explicit(&slots[i].sync_calls, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].sync_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].cached, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].queued, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].queue_wait_ns, 0, memory_order_relaxed);
    }
}
