/* cuda-trace's ground: what every part shares. The entry table (one entry per stub an
 * exported name or a pool stub of trampoline.S jumps through), the settings, NVIDIA's
 * driver once loaded, the order of records and the pool of stubs. Starting the shim is
 * start.c's, what happens on a call is calls.c's; this file calls neither, so every part
 * can use it without a loop. */
#include <stdatomic.h>

#include "trace.h"

struct trace_entry trace_entries[TRACE_ENTRY_COUNT];
struct trace_settings trace_cfg;
void *trace_real_handle;

static _Atomic uint64_t seq_counter;
static _Atomic int pool_next;

uint64_t trace_next_seq(void) { return atomic_fetch_add(&seq_counter, 1) + 1; }

uint64_t trace_seq_used(void) { return atomic_load(&seq_counter); }

unsigned trace_count_call(int id)
{
    return (unsigned)atomic_fetch_add_explicit(&trace_entries[id].calls, 1, memory_order_relaxed);
}

int trace_pool_alloc(void)
{
    int i = atomic_fetch_add(&pool_next, 1);
    if (i >= TRACE_POOL_SIZE) {
        atomic_store(&pool_next, TRACE_POOL_SIZE);
        return -1;
    }
    return TRACE_POOL_BASE + i;
}

int trace_pool_used(void) { return atomic_load(&pool_next); }

void *trace_pool_stub(int id)
{
    return (char *)(void *)trace_pool_stubs + (size_t)(id - TRACE_POOL_BASE) * TRACE_POOL_STUB_BYTES;
}
