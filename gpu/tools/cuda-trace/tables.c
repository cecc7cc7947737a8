/* cuGetExportTable: the driver's private function tables, keyed by UUID, that cudart and
 * the libraries use instead of named functions. By default the caller gets a copy of the
 * table in which every word that points into executable code is a pool stub forwarding to
 * the driver's function, so each call through the table is logged with its arguments, result
 * and the memory it read and wrote; every other word (the size, NULL, data) is copied as it
 * is. Most tables start with their size in bytes; a first word that is no plausible size
 * means the table has none (context-local storage, c693336e...), and then
 * CUDA_TRACE_NOSIZE_WORDS words are copied: words past the real table's end are copied too
 * but never used by a caller that knows the table. Each table's words are written down once
 * (XT/XW records) the first time it is handed out.
 *
 * CUDA_TRACE_TABLES (modes.c) hands tables out in other ways, to find out what cudart's
 * integrity check covers: the driver's own table, a copy without stubs, the driver's table
 * with stubs written into it, or a table at another process's address (remote.c). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define MAX_TABLES 128
#define MAX_WORDS 512
#define CUDA_ERROR_NOT_FOUND 500

struct table_copy {
    uint8_t uuid[16];
    const uint64_t *real;
    uint64_t *copy;     /* what callers get: a copy, the driver's table itself, or a mirror */
    uint64_t *snapshot; /* the real table's words when copied, to notice a change */
    uint64_t *handed;   /* the words as handed out, to notice a program writing into them */
    unsigned nwords;
    int has_size;
    enum table_mode mode;
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
    trace_logf("XT", "table=%s real=%lx copy=%lx size=%s%lu words=%u mode=%s", uuid,
               (unsigned long)(uintptr_t)tc->real, (unsigned long)(uintptr_t)tc->copy, tc->has_size ? "" : "none:",
               (unsigned long)tc->snapshot[0], tc->nwords, trace_mode_name(tc->mode));
    for (unsigned i = 0; i < tc->nwords; i++) {
        uint64_t v = tc->snapshot[i];
        struct trace_line l;
        trace_line_start(&l, "XW");
        trace_line_add(&l, " table=%s word=%u value=%lx", uuid, i, (unsigned long)v);
        if (tc->has_size && i == 0) {
            trace_line_add(&l, " kind=size");
        } else if (v == 0) {
            trace_line_add(&l, " kind=null");
        } else if (tc->handed[i] != v || trace_is_code(v)) {
            trace_line_add(&l, " kind=code stub=%lx at=%s", (unsigned long)tc->handed[i],
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

/* Word i of table t (real value v) as a logging stub: the stub's address, or v when the pool
 * is exhausted (the slot then goes untraced, straight to the driver). A slot that is
 * cuGetProcAddress or cuGetExportTable goes to the shim's, so what it hands out is traced
 * too; one that CUDA_TRACE_REMOTE sends to the helper goes there. stub_id: a pool stub
 * allocated already (mirror-exact), or -1. */
static uint64_t slot_stub(int t, const uint8_t uuid[16], unsigned i, uint64_t v, int stub_id)
{
    int id = stub_id >= 0 ? stub_id : trace_pool_alloc();
    if (id < 0) return v;
    struct trace_entry *e = &trace_entries[id];
    void *remote = trace_remote_override(uuid, i, (void *)(uintptr_t)v);
    e->kind = ENTRY_SLOT;
    e->table = (uint16_t)t;
    e->slot = (uint16_t)i;
    e->real = remote ? remote : trace_own_function((void *)(uintptr_t)v);
    return (uint64_t)(uintptr_t)trace_pool_stub(id);
}

/* Which words an in-place mode replaces: the chosen ones (@N), else every code word; of a
 * table without a size word only the three known slots, as the words after them may belong
 * to something else of the driver's. */
static int replaced_in_place(const struct table_choice *c, int has_size, unsigned i, uint64_t v)
{
    if ((has_size && i == 0) || !trace_is_code(v)) return 0;
    if (c->words[0] == 0 && c->words[1] == 0 && !has_size && i > 2) return 0;
    return trace_choice_has_word(c, i);
}

/* The words of table t as handed out, into w (w starts as the driver's words); returns the
 * address callers get, or NULL when the mode cannot be applied (the caller copies instead). */
static uint64_t *place(int t, struct table_copy *tc, struct table_choice c, uint64_t *w)
{
    unsigned n = tc->nwords;
    switch (c.mode) {
    case MODE_SHALLOW:
    case MODE_DEEP: {
        uint64_t *copy = calloc(n ? n : 1, sizeof *copy);
        if (!copy) return NULL;
        for (unsigned i = 0; c.mode == MODE_DEEP && i < n; i++)
            if (!(tc->has_size && i == 0) && trace_is_code(w[i])) w[i] = slot_stub(t, tc->uuid, i, w[i], -1);
        memcpy(copy, w, n * sizeof *w);
        return copy;
    }
    case MODE_INPLACE:
    case MODE_ANON: {
        uint64_t targets[MAX_WORDS] = { 0 }, tramp[MAX_WORDS] = { 0 };
        unsigned idx[MAX_WORDS], k = 0;
        for (unsigned i = 0; i < n; i++)
            if (replaced_in_place(&c, tc->has_size, i, w[i])) {
                idx[k] = i;
                targets[k++] = slot_stub(t, tc->uuid, i, w[i], -1);
            }
        if (c.mode == MODE_ANON && trace_anon_trampolines(targets, k, tramp) != 0) return NULL;
        for (unsigned j = 0; j < k; j++) w[idx[j]] = c.mode == MODE_ANON ? tramp[j] : targets[j];
        if (trace_poke((void *)(uintptr_t)tc->real, w, n * sizeof *w) != 0) return NULL;
        return (uint64_t *)(uintptr_t)tc->real;
    }
    case MODE_MIRROR:
    case MODE_MIRROR_EXACT: {
        struct mirror_table *m = trace_mirror_find(tc->uuid);
        if (!m || m->nwords != n || m->has_size != tc->has_size) return NULL;
        trace_mirror_check(m, c.mode == MODE_MIRROR_EXACT);
        for (unsigned i = 0; i < n; i++) {
            if (m->kind[i] != 'c') continue; /* size, NULL and data words: this process's */
            if (!trace_is_code(w[i])) return NULL;
            if (c.mode == MODE_MIRROR) {
                w[i] = slot_stub(t, tc->uuid, i, w[i], -1);
            } else {
                if (m->stub[i] < 0) return NULL;
                slot_stub(t, tc->uuid, i, w[i], m->stub[i]);
                w[i] = m->words[i];
            }
        }
        uint64_t *at = (uint64_t *)(uintptr_t)m->addr;
        memcpy(at, w, n * sizeof *w);
        return at;
    }
    case MODE_REAL:
    case MODE_REFUSE:
        break;
    }
    return NULL;
}

static int make_copy(const uint8_t uuid[16], const uint64_t *real, struct table_choice choice)
{
    int t = atomic_load(&table_count);
    if (t >= MAX_TABLES) return -1;
    uint64_t first = 0;
    if (trace_safe_read(&first, (uint64_t)(uintptr_t)real, sizeof first) != sizeof first) return -1;
    int has_size = looks_like_size(first);
    unsigned want = has_size ? (unsigned)(first / 8) : trace_cfg.nosize_words;
    uint64_t *snapshot = calloc(want ? want : 1, sizeof *snapshot);
    uint64_t *handed = calloc(want ? want : 1, sizeof *handed);
    if (!snapshot || !handed) {
        free(snapshot);
        free(handed);
        return -1;
    }
    unsigned nwords = (unsigned)(trace_safe_read(snapshot, (uint64_t)(uintptr_t)real, want * 8) / 8);
    struct table_copy *tc = &tables[t];
    memcpy(tc->uuid, uuid, 16);
    tc->real = real;
    tc->snapshot = snapshot;
    tc->nwords = nwords;
    tc->has_size = has_size;
    tc->mode = choice.mode;
    memcpy(handed, snapshot, nwords * sizeof *handed);
    tc->copy = place(t, tc, choice, handed);
    if (!tc->copy) {
        /* the mode could not be applied (no mirror description for this table, a page that
         * could not be written): an ordinary copy, and the trace says so */
        char text[40];
        trace_table_uuid_text(t, text, sizeof text);
        trace_logf("XT", "table=%s mode=%s failed=yes fallback=deep", text, trace_mode_name(choice.mode));
        memcpy(handed, snapshot, nwords * sizeof *handed);
        tc->mode = MODE_DEEP;
        tc->copy = place(t, tc, (struct table_choice){ MODE_DEEP, { 0, 0 } }, handed);
        if (!tc->copy) return -1;
    }
    tc->handed = handed;
    atomic_store(&table_count, t + 1);
    return t;
}

/* What the driver's table should hold now: its own words, or, where stubs were written
 * into it, those. */
static const uint64_t *expected_real(const struct table_copy *tc)
{
    return tc->mode == MODE_INPLACE || tc->mode == MODE_ANON ? tc->handed : tc->snapshot;
}

/* The copy for (uuid, real), made on first sight. Its words are logged after the lock is
 * released: naming code takes the dynamic loader's lock (dladdr), which a thread running a
 * library constructor holds while it may be waiting here for tables_lock. */
const void *trace_table_wrap(const uint8_t uuid[16], const void *real, struct table_choice choice)
{
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
        if (n != tc->nwords * 8 || memcmp(now, expected_real(tc), n) != 0) {
            char text[40];
            trace_table_uuid_text(found, text, sizeof text);
            trace_logf("XT", "table=%s changed=yes", text);
            /* a table changed under stubs written into it is not written again */
            if (tc->mode == MODE_INPLACE || tc->mode == MODE_ANON) choice.mode = MODE_DEEP;
            found = fresh = make_copy(uuid, real, choice);
        }
    } else {
        found = fresh = make_copy(uuid, real, choice);
    }
    if (found >= 0) {
        atomic_fetch_add(&tables[found].requests, 1);
        given = tables[found].copy;
    }
    pthread_mutex_unlock(&tables_lock);
    if (fresh >= 0) log_words(fresh);
    return given;
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
                now != expected_real(tc)[i])
                trace_logf("XC", "table=%s word=%u in=driver was=%lx now=%lx", uuid, i,
                           (unsigned long)expected_real(tc)[i], (unsigned long)now);
        }
        if (tc->copy == tc->real) continue; /* in place: the words above are the handed ones */
        /* the copy as handed out: the snapshot with code words replaced by stubs */
        for (unsigned i = 0; i < tc->nwords; i++) {
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
    char hex[33] = "";
    for (size_t i = 0; i < 16 && got == sizeof uuid; i++) snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    struct table_choice choice = trace_table_choice(hex);
    if (rc == 0 && ppExportTable) {
        real = *ppExportTable;
        given = real;
        if (real && got == sizeof uuid && choice.mode == MODE_REFUSE) {
            rc = CUDA_ERROR_NOT_FOUND;
            given = NULL;
            *ppExportTable = NULL;
        } else if (real && got == sizeof uuid && choice.mode != MODE_REAL) {
            given = trace_table_wrap(uuid, real, choice);
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
    trace_line_add(&l, " rc=%d table=%lx first=%lu copy=%lx mode=%s", rc, (unsigned long)(uintptr_t)real,
                   (unsigned long)first, (unsigned long)(uintptr_t)given, trace_mode_name(choice.mode));
    trace_line_end(&l);
    return rc;
}
