/* What happens on every call through a stub (trampoline.S): count it, write the first
 * calls down in order, and for those also catch the return to write down the result and
 * what the call wrote through its pointer arguments. Calls past the limits are forwarded
 * with a count only, no return tracking, so a long program pays little. At exit, the
 * calls each entry had. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define SHADOW_DEPTH 64

static _Atomic uint32_t logged_calls;

/* A call whose return is being watched: where to go back to and what to report. */
#define DUMPED_ARGS 10 /* six registers, then (table slots) the four words above the return address */

struct shadow_frame {
    uint64_t orig_ret;
    uint64_t *ret_slot;
    uint64_t seq;
    uint64_t args[DUMPED_ARGS];
    int32_t id;
    uint8_t dumped;
    uint16_t before_len[DUMPED_ARGS];
    uint8_t before[DUMPED_ARGS][TRACE_MAX_DUMP];
};

struct shadow_stack {
    int depth;
    struct shadow_frame frames[SHADOW_DEPTH];
};

static pthread_key_t shadow_key;
static pthread_once_t shadow_key_once = PTHREAD_ONCE_INIT;
static __thread struct shadow_stack *shadow;

static void free_shadow(void *p) { free(p); }

/* The key frees a thread's stack when the thread ends. */
static void make_shadow_key(void) { pthread_key_create(&shadow_key, free_shadow); }

static struct shadow_stack *my_shadow(void)
{
    if (!shadow) {
        pthread_once(&shadow_key_once, make_shadow_key);
        shadow = calloc(1, sizeof *shadow);
        if (shadow) pthread_setspecific(shadow_key, shadow);
    }
    return shadow;
}

/* One argument: a code address is named, readable memory is dumped (dump != NULL). */
static uint16_t describe_arg(struct trace_line *l, int i, uint64_t v, uint8_t *dump, const char *suffix)
{
    uint8_t tmp[TRACE_MAX_DUMP];
    uint8_t *buf = dump ? dump : tmp;
    if (v < 65536) return 0;
    size_t n = trace_safe_read(buf, v, trace_cfg.dump_bytes);
    if (n == 0) return 0;
    if (trace_is_code(v)) {
        char desc[512];
        trace_line_add(l, " c%d%s=%s", i, suffix, trace_describe_code(v, desc, sizeof desc));
        return 0;
    }
    trace_line_add(l, " p%d%s=", i, suffix);
    trace_line_hex(l, buf, n);
    return (uint16_t)n;
}

static void entry_label(struct trace_line *l, const struct trace_entry *e)
{
    if (e->kind == ENTRY_SLOT) {
        char uuid[40];
        trace_table_uuid_text(e->table, uuid, sizeof uuid);
        trace_line_add(l, " table=%s slot=%u", uuid, e->slot);
    } else {
        trace_line_add(l, " fn=%s", e->name ? e->name : "?");
    }
}

void *trace_on_enter(struct trace_regs *r)
{
    trace_ensure_init();
    int id = (int)r->id;
    if (id < 0 || id >= TRACE_ENTRY_COUNT || trace_entries[id].real == NULL) {
        static const char msg[] = "cuda-trace: call through an unassigned stub\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    struct trace_entry *e = &trace_entries[id];
    trace_count_call(id);

    int log = 0, dumps = 0;
    if (e->kind == ENTRY_SLOT) {
        log = atomic_fetch_add_explicit(&e->logged, 1, memory_order_relaxed) < trace_cfg.slot_calls;
        dumps = log;
    } else {
        uint32_t n = atomic_fetch_add_explicit(&logged_calls, 1, memory_order_relaxed);
        log = n < trace_cfg.max_calls;
        dumps = n < trace_cfg.dump_calls;
    }
    if (!log) return e->real;

    uint64_t seq = trace_next_seq();
    struct shadow_stack *s = trace_cfg.track_returns ? my_shadow() : NULL;
    struct shadow_frame *f = (s && s->depth < SHADOW_DEPTH) ? &s->frames[s->depth] : NULL;

    struct trace_line l;
    char caller[320];
    trace_line_start(&l, e->kind == ENTRY_SLOT ? "XE" : "CE");
    trace_line_add(&l, " seq=%lu tid=%u", (unsigned long)seq, trace_tid());
    entry_label(&l, e);
    trace_line_add(&l, " caller=%s a=%lx,%lx,%lx,%lx,%lx,%lx", trace_object_of(*r->ret_slot, caller, sizeof caller),
                   (unsigned long)r->args[0], (unsigned long)r->args[1], (unsigned long)r->args[2],
                   (unsigned long)r->args[3], (unsigned long)r->args[4], (unsigned long)r->args[5]);
    /* args[6..9]: the words above the return address, a slot's stack arguments if it takes
     * more than six (dumped like the registers: pointers there are written through too) */
    uint64_t args[DUMPED_ARGS] = { 0 };
    int nargs = 6;
    memcpy(args, r->args, 6 * sizeof args[0]);
    if (e->kind == ENTRY_SLOT) {
        size_t got = trace_safe_read(args + 6, (uint64_t)(uintptr_t)(r->ret_slot + 1), 4 * sizeof args[0]);
        nargs = 6 + (int)(got / 8);
        trace_line_add(&l, " s=");
        for (int i = 6; i < nargs; i++) trace_line_add(&l, "%s%lx", i > 6 ? "," : "", (unsigned long)args[i]);
    }
    if (dumps) {
        for (int i = 0; i < nargs; i++) {
            uint16_t n = describe_arg(&l, i, args[i], f ? f->before[i] : NULL, "");
            if (f) f->before_len[i] = n;
        }
    }
    if (!f) trace_line_add(&l, " ret=untracked");
    trace_line_end(&l);

    if (f) {
        f->orig_ret = *r->ret_slot;
        f->ret_slot = r->ret_slot;
        f->seq = seq;
        f->id = id;
        f->dumped = (uint8_t)dumps;
        memcpy(f->args, args, sizeof f->args);
        for (int i = nargs; i < DUMPED_ARGS; i++) f->before_len[i] = 0;
        if (!dumps) memset(f->before_len, 0, sizeof f->before_len);
        s->depth++;
        *r->ret_slot = (uint64_t)(uintptr_t)trace_return;
    }
    return e->real;
}

uint64_t trace_on_return(struct trace_ret_regs *r, uint64_t *rsp_after)
{
    struct shadow_stack *s = shadow;
    /* The frame whose return-address slot sits just below the returning stack pointer;
     * frames above it were left by a longjmp past them. */
    int skipped = 0;
    while (s && s->depth > 0 && s->frames[s->depth - 1].ret_slot + 1 != rsp_after) {
        s->depth--;
        skipped++;
    }
    if (!s || s->depth == 0) {
        static const char msg[] = "cuda-trace: a traced call returned with no record of its caller\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    struct shadow_frame *f = &s->frames[--s->depth];
    struct trace_entry *e = &trace_entries[f->id];
    struct trace_line l;
    trace_line_start(&l, e->kind == ENTRY_SLOT ? "XR" : "CR");
    trace_line_add(&l, " seq=%lu tid=%u", (unsigned long)f->seq, trace_tid());
    entry_label(&l, e);
    if (e->kind == ENTRY_SLOT)
        trace_line_add(&l, " ret=%lx rdx=%lx", (unsigned long)r->rax, (unsigned long)r->rdx);
    else
        trace_line_add(&l, " rc=%d", (int)(uint32_t)r->rax);
    if (skipped) trace_line_add(&l, " unwound=%d", skipped);
    if (f->dumped) {
        for (int i = 0; i < DUMPED_ARGS; i++) {
            if (f->before_len[i] == 0) continue;
            uint8_t after[TRACE_MAX_DUMP];
            size_t n = trace_safe_read(after, f->args[i], f->before_len[i]);
            if (n == f->before_len[i] && memcmp(after, f->before[i], n) == 0) {
                trace_line_add(&l, " p%d'=same", i);
            } else {
                trace_line_add(&l, " p%d'=", i);
                trace_line_hex(&l, after, n);
            }
        }
    }
    trace_line_end(&l);
    return f->orig_ret;
}

static void write_summary(void)
{
    for (int i = 0; i < TRACE_ENTRY_COUNT; i++) {
        struct trace_entry *e = &trace_entries[i];
        uint64_t n = atomic_load(&e->calls);
        if (n == 0) continue;
        struct trace_line l;
        trace_line_start(&l, "S");
        entry_label(&l, e);
        trace_line_add(&l, " kind=%s calls=%lu",
                       e->kind == ENTRY_SLOT ? "slot" : e->kind == ENTRY_PROC ? "proc" : "export", (unsigned long)n);
        trace_line_end(&l);
    }
    trace_tables_summary();
    trace_logf("E", "seq=%lu logged_calls=%u pool_used=%d", (unsigned long)trace_seq_used(),
               atomic_load(&logged_calls), trace_pool_used());
}

__attribute__((destructor)) static void at_exit(void)
{
    if (trace_real_handle || trace_seq_used()) write_summary();
}
