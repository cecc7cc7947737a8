/* cuda-trace's core: loading NVIDIA's driver, the entry table, and what happens on every
 * call through a stub (trampoline.S): count it, write the first calls down in order, and
 * for those also catch the return to write down the result and what the call wrote
 * through its pointer arguments. Calls past the limits are forwarded with a count only,
 * no return tracking, so a long program pays little. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

#define MAX_DUMP 128
#define SHADOW_DEPTH 64
#define CUDA_ERROR_NOT_SUPPORTED 801

struct trace_entry trace_entries[TRACE_ENTRY_COUNT];
struct trace_settings trace_cfg;
void *trace_real_handle;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int initializing;
static _Atomic uint64_t seq_counter;
static _Atomic uint32_t logged_calls;
static _Atomic int pool_next;

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
    uint8_t before[DUMPED_ARGS][MAX_DUMP];
};

struct shadow_stack {
    int depth;
    struct shadow_frame frames[SHADOW_DEPTH];
};

static pthread_key_t shadow_key;
static __thread struct shadow_stack *shadow;

static void free_shadow(void *p) { free(p); }

/* The driver's slot for a name it does not export (an older driver than the list). */
static int missing_function(void) { return CUDA_ERROR_NOT_SUPPORTED; }

static uint32_t env_u32(const char *name, uint32_t dflt, uint32_t max)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    unsigned long x = strtoul(v, &end, 0);
    if (*end || x > max) {
        fprintf(stderr, "cuda-trace: %s=%s is not a number up to %u; using %u\n", name, v, max, dflt);
        return dflt;
    }
    return (uint32_t)x;
}

static void read_settings(void)
{
    const char *real = getenv("CUDA_TRACE_REAL");
    trace_cfg.real_path = real && *real ? real : NULL;
    trace_cfg.max_calls = env_u32("CUDA_TRACE_MAX_CALLS", 20000, 100000000);
    trace_cfg.dump_calls = env_u32("CUDA_TRACE_DUMP_CALLS", 2000, 100000000);
    trace_cfg.slot_calls = env_u32("CUDA_TRACE_SLOT_CALLS", 64, 100000000);
    trace_cfg.dump_bytes = env_u32("CUDA_TRACE_DUMP_BYTES", 64, MAX_DUMP);
    trace_cfg.nosize_words = env_u32("CUDA_TRACE_NOSIZE_WORDS", 16, 512);
    trace_cfg.copy_tables = (int)env_u32("CUDA_TRACE_COPY_TABLES", 1, 1);
    trace_cfg.nocopy = getenv("CUDA_TRACE_NOCOPY");
    trace_cfg.track_returns = (int)env_u32("CUDA_TRACE_RETURNS", 1, 1);
    trace_cfg.deepbind = (int)env_u32("CUDA_TRACE_DEEPBIND", 0, 1);
    trace_cfg.tables = getenv("CUDA_TRACE_TABLES");
    if (trace_modes_parse(trace_cfg.tables) != 0) trace_cfg.tables = "(invalid)";
    const char *remote = getenv("CUDA_TRACE_REMOTE");
    trace_cfg.remote = remote && *remote ? remote : NULL;
    trace_cfg.remote_slot3 = (int)env_u32("CUDA_TRACE_REMOTE_SLOT3", 0, 1);
    const char *mirror = getenv("CUDA_TRACE_MIRROR");
    trace_cfg.mirror = mirror && *mirror ? mirror : NULL;
    const char *oracle = getenv("CUDA_TRACE_ORACLE");
    trace_cfg.oracle = oracle && *oracle ? oracle : NULL;
    trace_cfg.oracle_flags = trace_oracle_flags(getenv("CUDA_TRACE_ORACLE_FLAGS"));
    if (trace_cfg.oracle) trace_cfg.remote = trace_cfg.oracle; /* the oracle answers the slot */
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The real driver: CUDA_TRACE_REAL, else the usual places; never this file itself. */
static void *load_real_driver(const char **path_out)
{
    static const char *const defaults[] = {
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
        "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1",
    };
    Dl_info self;
    const char *self_path = dladdr((void *)load_real_driver, &self) ? self.dli_fname : "";
    int flags = RTLD_NOW | RTLD_LOCAL | (trace_cfg.deepbind ? RTLD_DEEPBIND : 0);
    const char *candidates[5];
    size_t n = 0;
    if (trace_cfg.real_path) {
        candidates[n++] = trace_cfg.real_path;
    } else {
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) candidates[n++] = defaults[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (access(candidates[i], R_OK) != 0) continue;
        if (same_file(candidates[i], self_path)) {
            fprintf(stderr, "cuda-trace: %s is this shim, not the driver; set CUDA_TRACE_REAL\n", candidates[i]);
            continue;
        }
        void *h = dlopen(candidates[i], flags);
        if (h) {
            *path_out = candidates[i];
            return h;
        }
        fprintf(stderr, "cuda-trace: dlopen(%s): %s\n", candidates[i], dlerror());
    }
    return NULL;
}

static void write_summary(void);

static void init(void)
{
    initializing = 1;
    read_settings();
    pthread_key_create(&shadow_key, free_shadow);
    pthread_atfork(NULL, NULL, trace_log_after_fork);
    trace_log_open();
    /* mirror pages first: the driver must not be loaded where the helper's tables are */
    trace_mirror_init();
    const char *path = NULL;
    trace_real_handle = load_real_driver(&path);
    if (!trace_real_handle) {
        fprintf(stderr, "cuda-trace: no real libcuda.so.1 loaded (CUDA_TRACE_REAL=%s); every call fails\n",
                trace_cfg.real_path ? trace_cfg.real_path : "unset");
        trace_logf("H", "real=none");
    }
    for (unsigned i = 0; i < trace_export_count; i++) {
        struct trace_entry *e = &trace_entries[i];
        e->name = trace_export_names[i];
        e->kind = ENTRY_EXPORT;
        void *f = trace_real_handle ? dlsym(trace_real_handle, e->name) : NULL;
        e->real = f ? f : (void *)missing_function;
        if (!f && trace_real_handle) trace_logf("H", "missing=%s", e->name);
    }
    trace_procaddr_init();
    if (trace_real_handle) {
        int version = 0;
        int (*get_version)(int *) = (int (*)(int *))dlsym(trace_real_handle, "cuDriverGetVersion");
        int rc = get_version ? get_version(&version) : -1;
        trace_logf("H", "real=%s driver_version=%d rc=%d", path, version, rc);
    }
    trace_logf("H", "settings max_calls=%u dump_calls=%u slot_calls=%u dump_bytes=%u nosize_words=%u "
               "copy_tables=%d nocopy=%s returns=%d deepbind=%d",
               trace_cfg.max_calls, trace_cfg.dump_calls, trace_cfg.slot_calls, trace_cfg.dump_bytes,
               trace_cfg.nosize_words, trace_cfg.copy_tables, trace_cfg.nocopy ? trace_cfg.nocopy : "-",
               trace_cfg.track_returns, trace_cfg.deepbind);
    trace_logf("H", "experiments tables=%s remote=%s remote_slot3=%d mirror=%s oracle=%s oracle_flags=%u",
               trace_cfg.tables ? trace_cfg.tables : "-", trace_cfg.remote ? trace_cfg.remote : "-",
               trace_cfg.remote_slot3, trace_cfg.mirror ? trace_cfg.mirror : "-",
               trace_cfg.oracle ? trace_cfg.oracle : "-", trace_cfg.oracle_flags);
    initializing = 0;
}

void trace_ensure_init(void)
{
    if (initializing) {
        /* The driver called one of our names while it was being loaded: its own symbols
         * bind to ours. RTLD_DEEPBIND makes them bind to its own. */
        static const char msg[] = "cuda-trace: the driver called back into the shim while loading; "
                                  "try CUDA_TRACE_DEEPBIND=1\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    pthread_once(&init_once, init);
}

uint64_t trace_next_seq(void) { return atomic_fetch_add(&seq_counter, 1) + 1; }

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

void *trace_pool_stub(int id)
{
    return (char *)(void *)trace_pool_stubs + (size_t)(id - TRACE_POOL_BASE) * TRACE_POOL_STUB_BYTES;
}

static struct shadow_stack *my_shadow(void)
{
    if (!shadow) {
        shadow = calloc(1, sizeof *shadow);
        if (shadow) pthread_setspecific(shadow_key, shadow);
    }
    return shadow;
}

/* One argument: a code address is named, readable memory is dumped (dump != NULL). */
static uint16_t describe_arg(struct trace_line *l, int i, uint64_t v, uint8_t *dump, const char *suffix)
{
    uint8_t tmp[MAX_DUMP];
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
            uint8_t after[MAX_DUMP];
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
    trace_logf("E", "seq=%lu logged_calls=%u pool_used=%d", (unsigned long)atomic_load(&seq_counter),
               atomic_load(&logged_calls), atomic_load(&pool_next));
}

__attribute__((destructor)) static void at_exit(void)
{
    if (trace_real_handle || atomic_load(&seq_counter)) write_summary();
}
