/* Starting cuda-trace, once, at the first call that reaches it: the settings from the
 * environment, the mirror pages (remote.c), NVIDIA's driver, and the entry table's exported
 * names bound to the driver's functions. Every entry point (calls.c, procaddr.c, tables.c)
 * calls trace_ensure_init first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

#define CUDA_ERROR_NOT_SUPPORTED 801

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int initializing;

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
    trace_cfg.dump_bytes = env_u32("CUDA_TRACE_DUMP_BYTES", 64, TRACE_MAX_DUMP);
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

static void init(void)
{
    initializing = 1;
    read_settings();
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
