/* cuGetExportTable: the driver's private function tables, keyed by UUID, that cudart and
 * the libraries use instead of named functions. The caller gets a copy of the table in
 * which every word that points into executable code is a pool stub forwarding to the
 * driver's function, so each call through the table is logged with its arguments, result
 * and the memory it read and wrote; every other word (the size, NULL, data) is copied as
 * it is. Most tables start with their size in bytes; a first word that is no plausible
 * size means the table has none (context-local storage, c693336e...), and then
 * CUDA_TRACE_NOSIZE_WORDS words are copied: words past the real table's end are copied
 * too but never used by a caller that knows the table. Each table's words are written
 * down once (XT/XW records) the first time it is handed out. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace.h"

#define MAX_TABLES 128
#define MAX_WORDS 512

struct table_copy {
    uint8_t uuid[16];
    const uint64_t *real;
    uint64_t *copy;
    uint64_t *snapshot; /* the real table's words when copied, to notice a change */
    uint64_t *handed;   /* the copy's words as handed out, to notice a program writing into it */
    unsigned nwords;
    int has_size;
    _Atomic uint64_t requests;
};

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct table_copy tables[MAX_TABLES];
static _Atomic int table_count;

void trace_table_uuid_text(int table, char *buf, size_t len)
{
    if (table < 0 || table >= atomic_load(&table_count)) {
        snprintf(buf, len, "?");
        return;
    }
    for (size_t i = 0; i < 16 && 2 * i + 2 < len; i++) snprintf(buf + 2 * i, len - 2 * i, "%02x", tables[table].uuid[i]);
}

static void log_words(int t)
{
    struct table_copy *tc = &tables[t];
    char uuid[40], desc[512];
    trace_table_uuid_text(t, uuid, sizeof uuid);
    trace_logf("XT", "table=%s real=%lx copy=%lx size=%s%lu words=%u", uuid, (unsigned long)(uintptr_t)tc->real,
               (unsigned long)(uintptr_t)tc->copy, tc->has_size ? "" : "none:", (unsigned long)tc->snapshot[0],
               tc->nwords);
    for (unsigned i = 0; i < tc->nwords; i++) {
        uint64_t v = tc->snapshot[i];
        struct trace_line l;
        trace_line_start(&l, "XW");
        trace_line_add(&l, " table=%s word=%u value=%lx", uuid, i, (unsigned long)v);
        if (tc->has_size && i == 0) {
            trace_line_add(&l, " kind=size");
        } else if (v == 0) {
            trace_line_add(&l, " kind=null");
        } else if (tc->copy[i] != v) {
            trace_line_add(&l, " kind=code stub=%lx at=%s", (unsigned long)tc->copy[i],
                           trace_describe_code(v, desc, sizeof desc));
        } else {
            uint8_t bytes[64];
            size_t n = trace_safe_read(bytes, v, sizeof bytes);
            if (n == 0) {
                trace_line_add(&l, " kind=value");
            } else {
                trace_line_add(&l, " kind=data at=%s bytes=", trace_object_of(v, desc, sizeof desc));
                trace_line_hex(&l, bytes, n);
            }
        }
        trace_line_end(&l);
    }
}

/* A first word that can be a size: a multiple of 8 from 16 bytes to MAX_WORDS words. */
static int looks_like_size(uint64_t w) { return w >= 16 && w <= MAX_WORDS * 8 && w % 8 == 0; }

static int make_copy(const uint8_t uuid[16], const uint64_t *real)
{
    int t = atomic_load(&table_count);
    if (t >= MAX_TABLES) return -1;
    uint64_t first = 0;
    if (trace_safe_read(&first, (uint64_t)(uintptr_t)real, sizeof first) != sizeof first) return -1;
    int has_size = looks_like_size(first);
    unsigned want = has_size ? (unsigned)(first / 8) : trace_cfg.nosize_words;
    uint64_t *snapshot = calloc(want ? want : 1, sizeof *snapshot);
    uint64_t *copy = calloc(want ? want : 1, sizeof *copy);
    if (!snapshot || !copy) {
        free(snapshot);
        free(copy);
        return -1;
    }
    unsigned nwords = (unsigned)(trace_safe_read(snapshot, (uint64_t)(uintptr_t)real, want * 8) / 8);
    struct table_copy *tc = &tables[t];
    memcpy(tc->uuid, uuid, 16);
    tc->real = real;
    tc->copy = copy;
    tc->snapshot = snapshot;
    tc->nwords = nwords;
    tc->has_size = has_size;
    for (unsigned i = 0; i < nwords; i++) {
        uint64_t v = snapshot[i];
        copy[i] = v;
        if ((has_size && i == 0) || !trace_is_code(v)) continue;
        int id = trace_pool_alloc();
        if (id < 0) continue; /* pool exhausted: this slot goes untraced, straight to the driver */
        struct trace_entry *e = &trace_entries[id];
        e->kind = ENTRY_SLOT;
        e->table = (uint16_t)t;
        e->slot = (uint16_t)i;
        /* A slot that is cuGetProcAddress or cuGetExportTable goes to the shim's, so what
         * it hands out is traced too. */
        e->real = trace_own_function((void *)(uintptr_t)v);
        copy[i] = (uint64_t)(uintptr_t)trace_pool_stub(id);
    }
    tc->handed = calloc(nwords ? nwords : 1, sizeof *tc->handed);
    if (tc->handed) memcpy(tc->handed, copy, nwords * sizeof *copy);
    atomic_store(&table_count, t + 1);
    return t;
}

/* The copy for (uuid, real), made on first sight. Its words are logged after the lock is
 * released: naming code takes the dynamic loader's lock (dladdr), which a thread running a
 * library constructor holds while it may be waiting here for tables_lock. */
const void *trace_table_wrap(const uint8_t uuid[16], const void *real, uint64_t caller)
{
    (void)caller;
    const void *given = real;
    int fresh = -1;
    pthread_mutex_lock(&tables_lock);
    int found = -1;
    for (int t = atomic_load(&table_count) - 1; t >= 0; t--) {
        if (tables[t].real == real && memcmp(tables[t].uuid, uuid, 16) == 0) {
            found = t;
            break;
        }
    }
    if (found >= 0) {
        /* A driver that rewrote its table since gets a fresh copy. */
        struct table_copy *tc = &tables[found];
        uint64_t now[MAX_WORDS];
        size_t n = trace_safe_read(now, (uint64_t)(uintptr_t)real, tc->nwords * 8);
        if (n != tc->nwords * 8 || memcmp(now, tc->snapshot, n) != 0) {
            char text[40];
            trace_table_uuid_text(found, text, sizeof text);
            trace_logf("XT", "table=%s changed=yes", text);
            found = fresh = make_copy(uuid, real);
        }
    } else {
        found = fresh = make_copy(uuid, real);
    }
    if (found >= 0) {
        atomic_fetch_add(&tables[found].requests, 1);
        given = tables[found].copy;
    }
    pthread_mutex_unlock(&tables_lock);
    if (fresh >= 0) log_words(fresh);
    return given;
}

/* Whether CUDA_TRACE_NOCOPY names this table (a prefix of its UUID in hex, any case). */
int trace_table_excluded(const char *uuid_hex)
{
    const char *list = trace_cfg.nocopy;
    while (list && *list) {
        size_t n = strcspn(list, ",");
        if (n > 0 && n <= 32 && strncasecmp(list, uuid_hex, n) == 0) return 1;
        list += n;
        if (*list == ',') list++;
    }
    return 0;
}

/* At exit: each table, and any word that changed since it was copied, in the driver's table
 * (the driver keeps state there) or in the copy (the program writes into the table: the
 * driver never saw that write, which the trace must say). */
void trace_tables_summary(void)
{
    int n = atomic_load(&table_count);
    for (int t = 0; t < n; t++) {
        struct table_copy *tc = &tables[t];
        char uuid[40];
        trace_table_uuid_text(t, uuid, sizeof uuid);
        trace_logf("ST", "table=%s words=%u size=%s requests=%lu", uuid, tc->nwords, tc->has_size ? "word0" : "none",
                   (unsigned long)atomic_load(&tc->requests));
        for (unsigned i = 0; i < tc->nwords; i++) {
            uint64_t now = 0;
            if (trace_safe_read(&now, (uint64_t)(uintptr_t)(tc->real + i), sizeof now) == sizeof now &&
                now != tc->snapshot[i])
                trace_logf("XC", "table=%s word=%u in=driver was=%lx now=%lx", uuid, i, (unsigned long)tc->snapshot[i],
                           (unsigned long)now);
        }
        /* the copy as handed out: the snapshot with code words replaced by stubs */
        for (unsigned i = 0; i < tc->nwords; i++) {
            if (!tc->handed) break;
            uint64_t given = tc->handed[i];
            if (tc->copy[i] != given)
                trace_logf("XC", "table=%s word=%u in=copy was=%lx now=%lx", uuid, i, (unsigned long)given,
                           (unsigned long)tc->copy[i]);
        }
    }
}

TRACE_EXPORT int cuGetExportTable(const void **ppExportTable, const void *pExportTableId);

/* The caller gets the logging copy; the request is written down after the table's words. */
int cuGetExportTable(const void **ppExportTable, const void *pExportTableId)
{
    trace_ensure_init();
    static int id = -1;
    if (id < 0) id = trace_export_id("cuGetExportTable");
    trace_count_call(id);
    typedef int (*get_table_fn)(const void **, const void *);
    int rc = trace_real_handle ? ((get_table_fn)trace_entries[id].real)(ppExportTable, pExportTableId) : 999;
    uint8_t uuid[16] = { 0 };
    size_t got = trace_safe_read(uuid, (uint64_t)(uintptr_t)pExportTableId, sizeof uuid);
    const void *real = NULL, *given = NULL;
    if (rc == 0 && ppExportTable) {
        real = *ppExportTable;
        given = real;
        char hex[33];
        for (size_t i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
        if (real && got == sizeof uuid && trace_cfg.copy_tables && !trace_table_excluded(hex)) {
            given = trace_table_wrap(uuid, real, (uint64_t)(uintptr_t)__builtin_return_address(0));
            *ppExportTable = given;
        }
    }
    uint64_t first = 0;
    if (real) trace_safe_read(&first, (uint64_t)(uintptr_t)real, sizeof first);
    char who[320];
    struct trace_line l;
    trace_line_start(&l, "EXP");
    trace_line_add(&l, " seq=%lu tid=%u caller=%s uuid=", (unsigned long)trace_next_seq(), trace_tid(),
                   trace_object_of((uint64_t)(uintptr_t)__builtin_return_address(0), who, sizeof who));
    if (got == sizeof uuid)
        trace_line_hex(&l, uuid, sizeof uuid);
    else
        trace_line_add(&l, "unreadable");
    trace_line_add(&l, " rc=%d table=%lx first=%lu copy=%lx", rc, (unsigned long)(uintptr_t)real,
                   (unsigned long)first, (unsigned long)(uintptr_t)given);
    trace_line_end(&l);
    return rc;
}
