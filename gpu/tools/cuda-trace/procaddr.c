/* cuGetProcAddress and cuGetProcAddress_v2: how cudart and every NVIDIA library reach the
 * driver (they dlsym only cuGetProcAddress_v2). Each lookup is written down with what the
 * driver answered, and the caller gets back a stub that counts and logs its calls: the
 * shim's exported stub when the driver's answer is one of its exported functions (so the
 * log also shows which versioned name a request resolves to), else a pool stub. Asked for
 * cuGetProcAddress or cuGetExportTable themselves, the caller gets the shim's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef int (*gpa_v1_fn)(const char *, void **, int, uint64_t);
typedef int (*gpa_v2_fn)(const char *, void **, int, uint64_t, int *);

TRACE_EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags);
TRACE_EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags,
                                     int *symbolStatus);
TRACE_EXPORT int cuGetExportTable(const void **ppExportTable, const void *pExportTableId); /* tables.c */

struct addr_id {
    uintptr_t addr;
    int id;
};

static struct addr_id *by_addr; /* the driver's exported functions, sorted by address */
static unsigned by_addr_count;
static int id_gpa, id_gpa_v2, id_export_table;
static void *real_gpa, *real_gpa_v2, *real_export_table;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct addr_id proc_stubs[TRACE_POOL_SIZE]; /* pool stubs made for proc pointers */
static unsigned proc_stub_count;

static int by_address(const void *a, const void *b)
{
    uintptr_t x = ((const struct addr_id *)a)->addr, y = ((const struct addr_id *)b)->addr;
    return x < y ? -1 : x > y;
}

/* The ids and functions above, and the index of the driver's exported functions: made at
 * the first lookup or table slot, which always comes after the shim has started (every
 * caller is reached through cuGetProcAddress or cuGetExportTable, both of which start it),
 * so starting the shim need not call into this file. */
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_exports(void)
{
    id_gpa = trace_export_id("cuGetProcAddress");
    id_gpa_v2 = trace_export_id("cuGetProcAddress_v2");
    id_export_table = trace_export_id("cuGetExportTable");
    real_gpa = trace_entries[id_gpa].real;
    real_gpa_v2 = trace_entries[id_gpa_v2].real;
    real_export_table = trace_entries[id_export_table].real;
    by_addr = calloc(trace_export_count, sizeof *by_addr);
    if (!by_addr) return;
    for (unsigned i = 0; i < trace_export_count; i++) {
        if (!trace_real_handle) break;
        by_addr[by_addr_count++] = (struct addr_id){ (uintptr_t)trace_entries[i].real, (int)i };
    }
    qsort(by_addr, by_addr_count, sizeof *by_addr, by_address);
}

static int export_of(void *real)
{
    struct addr_id key = { (uintptr_t)real, 0 };
    struct addr_id *hit = bsearch(&key, by_addr, by_addr_count, sizeof *by_addr, by_address);
    if (!hit) return -1;
    /* Several names may share one function: the one the driver's symbol table gives for the
     * address (dladdr), else the lowest id (the plainest name). */
    while (hit > by_addr && hit[-1].addr == key.addr) hit--;
    Dl_info info;
    if (hit + 1 < by_addr + by_addr_count && hit[1].addr == key.addr && dladdr(real, &info) && info.dli_sname) {
        for (struct addr_id *a = hit; a < by_addr + by_addr_count && a->addr == key.addr; a++)
            if (strcmp(trace_export_names[a->id], info.dli_sname) == 0) return a->id;
    }
    return hit->id;
}

void *trace_own_function(void *real)
{
    pthread_once(&index_once, index_exports);
    if (real == real_gpa) return (void *)cuGetProcAddress;
    if (real == real_gpa_v2) return (void *)cuGetProcAddress_v2;
    if (real == real_export_table) return (void *)cuGetExportTable;
    return real;
}

/* What the caller gets instead of the driver's pointer. */
void *trace_proc_wrap(void *real, const char *symbol, int version, uint64_t flags)
{
    (void)flags;
    if (!real) return NULL;
    /* A driver whose own references to its exported names are interposable hands out the
     * shim's functions themselves: they are traced already. */
    if (trace_is_shim((uint64_t)(uintptr_t)real)) return real;
    if (trace_own_function(real) != real) return trace_own_function(real);
    int id = export_of(real);
    if (id >= 0) return (void *)trace_export_stubs[id];
    void *stub = NULL;
    pthread_mutex_lock(&pool_lock);
    for (unsigned i = 0; i < proc_stub_count; i++) {
        if (proc_stubs[i].addr == (uintptr_t)real) {
            stub = trace_pool_stub(proc_stubs[i].id);
            break;
        }
    }
    if (!stub) {
        int pid = trace_pool_alloc();
        if (pid >= 0) {
            char *name = malloc(160);
            if (name) {
                size_t n = strnlen(symbol, 120);
                memcpy(name, symbol, n);
                snprintf(name + n, 160 - n, "@%d", version);
            }
            struct trace_entry *e = &trace_entries[pid];
            e->name = name ? name : "?proc";
            e->kind = ENTRY_PROC;
            e->real = real;
            proc_stubs[proc_stub_count++] = (struct addr_id){ (uintptr_t)real, pid };
            stub = trace_pool_stub(pid);
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return stub ? stub : real;
}

/* The symbol a caller asked for, printable and without spaces. */
static void read_symbol(const char *symbol, char *buf, size_t len)
{
    size_t n = symbol ? trace_safe_read(buf, (uint64_t)(uintptr_t)symbol, len - 1) : 0;
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\0') break;
        if (buf[i] <= ' ' || buf[i] > '~') buf[i] = '?';
    }
}

static void log_lookup(const char *tag, void *caller, const char *symbol, int version, uint64_t flags, int rc,
                       void *real, void *given, const int *status)
{
    char sym[128], who[320], desc[512];
    read_symbol(symbol, sym, sizeof sym);
    struct trace_line l;
    trace_line_start(&l, tag);
    trace_line_add(&l, " seq=%lu tid=%u caller=%s sym=%s ver=%d flags=%lu rc=%d", (unsigned long)trace_next_seq(),
                   trace_tid(), trace_object_of((uint64_t)(uintptr_t)caller, who, sizeof who), sym, version,
                   (unsigned long)flags, rc);
    if (status) {
        int st = 0;
        if (trace_safe_read(&st, (uint64_t)(uintptr_t)status, sizeof st) == sizeof st)
            trace_line_add(&l, " status=%d", st);
    } else {
        trace_line_add(&l, " status=null");
    }
    trace_line_add(&l, " real=%s", real ? trace_describe_code((uint64_t)(uintptr_t)real, desc, sizeof desc) : "null");
    if (given && given != real) {
        int id = -1;
        for (unsigned i = 0; i < trace_export_count; i++) {
            if ((void *)trace_export_stubs[i] == given) {
                id = (int)i;
                break;
            }
        }
        if (id >= 0)
            trace_line_add(&l, " given=%s", trace_export_names[id]);
        else
            trace_line_add(&l, " given=pool:%ld", (long)(((char *)given - (char *)(void *)trace_pool_stubs) /
                                                        TRACE_POOL_STUB_BYTES + TRACE_POOL_BASE));
    } else if (given) {
        trace_line_add(&l, " given=real");
    }
    trace_line_end(&l);
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags, int *symbolStatus)
{
    trace_ensure_init();
    pthread_once(&index_once, index_exports);
    trace_count_call(id_gpa_v2);
    int rc = real_gpa_v2 && trace_real_handle
                 ? ((gpa_v2_fn)real_gpa_v2)(symbol, pfn, cudaVersion, flags, symbolStatus)
                 : 999;
    void *real = (rc == 0 && pfn) ? *pfn : NULL;
    void *given = trace_proc_wrap(real, symbol ? symbol : "", cudaVersion, flags);
    if (given) *pfn = given;
    log_lookup("GPA", __builtin_return_address(0), symbol, cudaVersion, flags, rc, real, given, symbolStatus);
    return rc;
}

int cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags)
{
    trace_ensure_init();
    pthread_once(&index_once, index_exports);
    trace_count_call(id_gpa);
    int rc = real_gpa && trace_real_handle ? ((gpa_v1_fn)real_gpa)(symbol, pfn, cudaVersion, flags) : 999;
    void *real = (rc == 0 && pfn) ? *pfn : NULL;
    void *given = trace_proc_wrap(real, symbol ? symbol : "", cudaVersion, flags);
    if (given) *pfn = given;
    log_lookup("GPA1", __builtin_return_address(0), symbol, cudaVersion, flags, rc, real, given, NULL);
    return rc;
}
