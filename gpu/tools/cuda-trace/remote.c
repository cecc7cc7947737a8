/* The helper process (gpu/tools/integrity-probe/helper.c): NVIDIA's driver loaded in a second
 * process, as ivcuda's cuda-server has it. With CUDA_TRACE_REMOTE=<socket> the integrity
 * check (d4082055 slot 1) is asked of the helper's driver instead of this process's, as
 * ivcuda forwards it; with CUDA_TRACE_REMOTE_SLOT3=1 the context checks slot 3 call cudart
 * makes just before it (263e8860, a 64-byte buffer) is also replayed there on a copy.
 *
 * The mirror modes place tables at the addresses the helper's driver has them
 * (CUDA_TRACE_MIRROR, default <socket>.tables, written by the helper): the description is
 * read at the shim's start, and every page a mirror table or (mirror-exact) a trampoline at
 * one of the helper's function addresses needs is mapped then, before this process's driver
 * is loaded. A page already taken is a collision: the run is void, the shim says so and
 * exits with status 97.
 *
 * With CUDA_TRACE_ORACLE=<socket> of an oracle helper (helper --oracles), the shim asks at
 * its start for an oracle of its own (REMOTE_OPEN: this process's pid, the ORACLE_* flags
 * of CUDA_TRACE_ORACLE_FLAGS), waits until it is ready, places the mirror tables where the
 * oracle has them (<socket>.<pid>.tables) and asks the integrity check of it, saying which
 * thread asks (pid, thread id, pthread_self(), the guards). No oracle: the shim says why and
 * exits with status 96. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "remote_proto.h"
#include "thread_words.h"
#include "trace.h"

#define CUDA_ERROR_UNKNOWN 999
#define COLLISION_EXIT 97
#define NO_ORACLE_EXIT 96
#define MAX_MIRROR 32

static const uint8_t INTEGRITY_UUID[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                            0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };
static const uint8_t CONTEXT_CHECKS_UUID[16] = { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
                                                 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e };

static pthread_mutex_t remote_lock = PTHREAD_MUTEX_INITIALIZER;
static int remote_fd = -1;
static pid_t remote_fd_pid;

/* One exchange with the helper; a forked child opens its own connection (but for an oracle,
 * which is its parent's: the child has none). */
static int exchange(const struct remote_request *q, struct remote_reply *r)
{
    int ok = -1;
    pthread_mutex_lock(&remote_lock);
    if (remote_fd >= 0 && remote_fd_pid != getpid()) {
        close(remote_fd);
        remote_fd = -1;
    }
    if (remote_fd < 0 && trace_cfg.oracle) {
        trace_logf("RX", "oracle=none (a child of the process the oracle was started for)");
    } else if (remote_fd < 0) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof a.sun_path, "%s", trace_cfg.remote);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            remote_fd = fd;
            remote_fd_pid = getpid();
        } else {
            trace_logf("RX", "connect=%s errno=%d", trace_cfg.remote, errno);
            if (fd >= 0) close(fd);
        }
    }
    if (remote_fd >= 0 && send(remote_fd, q, sizeof *q, MSG_NOSIGNAL) == (ssize_t)sizeof *q &&
        recv(remote_fd, r, sizeof *r, 0) == (ssize_t)sizeof *r && r->magic == REMOTE_MAGIC)
        ok = 0;
    pthread_mutex_unlock(&remote_lock);
    return ok;
}

/* Who asks: this process and thread, as an oracle may take them on. */
static void fill_asker(struct remote_request *q)
{
    q->pid = (uint32_t)getpid();
    q->tid = (uint32_t)syscall(SYS_gettid);
    q->self = (uint64_t)(uintptr_t)pthread_self();
    q->stack_guard = thread_word(THREAD_STACK_GUARD);
    q->pointer_guard = thread_word(THREAD_POINTER_GUARD);
    const uint8_t *random = (const uint8_t *)(uintptr_t)getauxval(AT_RANDOM);
    if (random) memcpy(q->at_random, random, 16);
}

static int remote_integrity(unsigned version, uint64_t seconds, uint8_t *answer)
{
    struct remote_request q = { .magic = REMOTE_MAGIC, .op = REMOTE_INTEGRITY, .version = version, .seconds = seconds };
    fill_asker(&q);
    struct remote_reply r;
    if (exchange(&q, &r) != 0) {
        trace_logf("RI", "version=%u seconds=%lu helper=unreachable", version, (unsigned long)seconds);
        return CUDA_ERROR_UNKNOWN;
    }
    if (answer && r.rc == 0) memcpy(answer, r.answer, 16);
    struct trace_line l;
    trace_line_start(&l, "RI");
    trace_line_add(&l, " version=%u seconds=%lu helper=%u rc=%d overrun=%u tid=%u self=%lx answer=", version,
                   (unsigned long)seconds, r.helper_pid, r.rc, r.overrun, q.tid, (unsigned long)q.self);
    trace_line_hex(&l, r.answer, 16);
    trace_line_end(&l);
    return r.rc;
}

typedef int (*six_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
static six_fn local_slot3;

/* The local driver's slot 3 first (this process's driver keeps its behaviour), then the same
 * buffer replayed in the helper; the local answer is returned. */
static int slot3_both(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f)
{
    int rc = local_slot3 ? local_slot3(a, b, c, d, e, f) : CUDA_ERROR_UNKNOWN;
    struct remote_request q = { .magic = REMOTE_MAGIC, .op = REMOTE_SLOT3 };
    q.len = (uint32_t)(b < sizeof q.data ? b : sizeof q.data);
    if (trace_safe_read(q.data, a, q.len) != q.len) q.len = 0;
    struct remote_reply r = { 0 };
    int sent = exchange(&q, &r);
    trace_logf("R3", "len=%u local_rc=%d helper_rc=%d%s", q.len, rc, r.rc, sent ? " helper=unreachable" : "");
    return rc;
}

void *trace_remote_override(const uint8_t uuid[16], unsigned word, void *original)
{
    if (!trace_cfg.remote) return NULL;
    if (word == 1 && memcmp(uuid, INTEGRITY_UUID, 16) == 0) return (void *)remote_integrity;
    if (word == 3 && trace_cfg.remote_slot3 && memcmp(uuid, CONTEXT_CHECKS_UUID, 16) == 0) {
        local_slot3 = (six_fn)original;
        return (void *)slot3_both;
    }
    return NULL;
}

/* A mirror-exact stub called before its table was handed out: cannot happen unless someone
 * guessed the address. */
int trace_stub_not_ready(void)
{
    static const char msg[] = "cuda-trace: a mirror trampoline was called before its table was handed out\n";
    (void)!write(2, msg, sizeof msg - 1);
    return CUDA_ERROR_UNKNOWN;
}

/* ---- the mirror description ---------------------------------------------------------- */

static struct mirror_table mirror[MAX_MIRROR];
static int mirror_count;

struct mirror_table *trace_mirror_find(const uint8_t uuid[16])
{
    for (int i = 0; i < mirror_count; i++)
        if (memcmp(mirror[i].uuid, uuid, 16) == 0) return &mirror[i];
    return NULL;
}

static int parse_uuid(const char *hex, uint8_t uuid[16])
{
    if (strlen(hex) != 32) return -1;
    for (int i = 0; i < 16; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
        uuid[i] = (uint8_t)v;
    }
    return 0;
}

/* Lines `T <uuid> <address> <words> <has_size>` and `W <uuid> <word> <value> <kind>`. */
static int read_description(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[256], uuid_hex[64], kind[16];
    while (fgets(line, sizeof line, f)) {
        unsigned long addr, value;
        unsigned words, word;
        int has_size;
        uint8_t uuid[16];
        if (sscanf(line, "T %63s %lx %u %d", uuid_hex, &addr, &words, &has_size) == 4) {
            if (mirror_count == MAX_MIRROR || parse_uuid(uuid_hex, uuid) != 0 || words > 128) continue;
            struct mirror_table *m = &mirror[mirror_count++];
            memcpy(m->uuid, uuid, 16);
            m->addr = addr;
            m->nwords = words;
            m->has_size = has_size;
            for (unsigned i = 0; i < 128; i++) m->stub[i] = -1;
        } else if (sscanf(line, "W %63s %u %lx %15s", uuid_hex, &word, &value, kind) == 4) {
            struct mirror_table *m = parse_uuid(uuid_hex, uuid) == 0 ? trace_mirror_find(uuid) : NULL;
            if (!m || word >= m->nwords) continue;
            m->words[word] = value;
            m->kind[word] = kind[0];
        }
    }
    fclose(f);
    return 0;
}

static void collision(const char *what, uint64_t page)
{
    trace_logf("H", "mirror=collision page=%lx what=%s", (unsigned long)page, what);
    fprintf(stderr, "cuda-trace: mirror collision: page %lx (%s) is taken in this process; this run is void\n",
            (unsigned long)page, what);
    _exit(COLLISION_EXIT);
}

/* The pages were mapped at the shim's start; the driver, loaded after, might map something of
 * its own over them (MAP_FIXED): then this run says nothing about the check. */
void trace_mirror_check(const struct mirror_table *m, int exact)
{
    uint64_t word;
    if (trace_safe_read(&word, m->addr, sizeof word) != sizeof word) collision("table page replaced", m->addr);
    for (unsigned i = 0; exact && i < m->nwords; i++) {
        if (m->stub[i] < 0) continue;
        uint8_t want[TRACE_TRAMPOLINE_BYTES], got[TRACE_TRAMPOLINE_BYTES];
        trace_write_trampoline(want, (uint64_t)(uintptr_t)trace_pool_stub(m->stub[i]));
        if (trace_safe_read(got, m->words[i], sizeof got) != sizeof got || memcmp(got, want, sizeof got) != 0)
            collision("trampoline replaced", m->words[i]);
    }
}

unsigned trace_oracle_flags(const char *text)
{
    unsigned flags = 0;
    if (!text) return 0;
    if (strstr(text, "pid")) flags |= ORACLE_PID;
    if (strstr(text, "self")) flags |= ORACLE_SELF;
    if (strstr(text, "guards")) flags |= ORACLE_GUARDS;
    return flags;
}

static void no_oracle(const char *why)
{
    trace_logf("H", "oracle=none why=%s", why);
    fprintf(stderr, "cuda-trace: no oracle from %s: %s\n", trace_cfg.oracle, why);
    _exit(NO_ORACLE_EXIT);
}

/* An oracle for this process: asked for now, ready when it answers (its driver loaded, its
 * tables described). The connection stays this process's way to it. */
static void open_oracle(void)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s", trace_cfg.oracle);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) no_oracle(strerror(errno));
    struct remote_request q = { .magic = REMOTE_MAGIC, .op = REMOTE_OPEN, .flags = trace_cfg.oracle_flags };
    fill_asker(&q);
    struct remote_reply r;
    ssize_t n = -1;
    if (send(fd, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q) n = recv(fd, &r, sizeof r, 0);
    if (n == 0) no_oracle("the oracle ended before it was ready (its reasons are in the helper's log)");
    if (n != (ssize_t)sizeof r || r.magic != REMOTE_MAGIC) {
        char why[96];
        snprintf(why, sizeof why, "no answer to REMOTE_OPEN (%zd bytes, %s)", n, n < 0 ? strerror(errno) : "-");
        no_oracle(why);
    }
    if (r.rc != 0) {
        char why[64];
        snprintf(why, sizeof why, "REMOTE_OPEN answered %d", r.rc);
        no_oracle(why);
    }
    remote_fd = fd;
    remote_fd_pid = getpid();
    trace_logf("H", "oracle=%s flags=%u oracle_pid=%u", trace_cfg.oracle, trace_cfg.oracle_flags, r.helper_pid);
}

/* At the shim's start, before the driver is loaded: every page the mirror tables chosen by
 * CUDA_TRACE_TABLES need, and for mirror-exact the trampolines, written now (they jump to
 * pool stubs whose target is set when the table is handed out). */
void trace_mirror_init(void)
{
    if (trace_cfg.oracle) open_oracle();
    if (!trace_modes_mention_mirror()) return;
    char path[4096];
    if (trace_cfg.oracle)
        snprintf(path, sizeof path, "%s.%d.tables", trace_cfg.oracle, (int)getpid());
    else if (trace_cfg.mirror)
        snprintf(path, sizeof path, "%s", trace_cfg.mirror);
    else if (trace_cfg.remote)
        snprintf(path, sizeof path, "%s.tables", trace_cfg.remote);
    else
        path[0] = 0;
    if (!path[0] || read_description(path) != 0) {
        trace_logf("H", "mirror=none path=%s", path[0] ? path : "-");
        fprintf(stderr, "cuda-trace: mirror modes need the helper's description (CUDA_TRACE_MIRROR or "
                        "CUDA_TRACE_REMOTE); tables are copied instead\n");
        return;
    }
    uint64_t busy;
    for (int t = 0; t < mirror_count; t++) {
        struct mirror_table *m = &mirror[t];
        char hex[33];
        for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", m->uuid[i]);
        struct table_choice c = trace_table_choice(hex);
        if (c.mode != MODE_MIRROR && c.mode != MODE_MIRROR_EXACT) continue;
        if (trace_reserve_pages(m->addr, 8ull * m->nwords, PROT_READ | PROT_WRITE, &busy) != 0) collision("table", busy);
        if (c.mode != MODE_MIRROR_EXACT) continue;
        for (unsigned i = 0; i < m->nwords; i++) {
            if (m->kind[i] != 'c') continue;
            if (trace_reserve_pages(m->words[i], TRACE_TRAMPOLINE_BYTES, PROT_READ | PROT_WRITE, &busy) != 0)
                collision("trampoline", busy);
            /* one function in several words (of this table or another): one trampoline, one stub */
            int id = -1;
            for (int u = 0; u <= t && id < 0; u++)
                for (unsigned j = 0; j < mirror[u].nwords && id < 0 && (u < t || j < i); j++)
                    if (mirror[u].stub[j] >= 0 && mirror[u].words[j] == m->words[i]) id = mirror[u].stub[j];
            if (id >= 0) {
                m->stub[i] = id;
                continue;
            }
            id = trace_pool_alloc();
            if (id < 0) continue;
            trace_entries[id].kind = ENTRY_SLOT;
            trace_entries[id].real = (void *)trace_stub_not_ready;
            m->stub[i] = id;
            trace_write_trampoline((uint8_t *)(uintptr_t)m->words[i], (uint64_t)(uintptr_t)trace_pool_stub(id));
        }
    }
    /* trampoline pages become executable; a page that also holds a table stays writable */
    for (int t = 0; t < mirror_count; t++) {
        struct mirror_table *m = &mirror[t];
        for (unsigned i = 0; i < m->nwords; i++) {
            if (m->stub[i] < 0) continue;
            for (uint64_t p = m->words[i] & ~4095ull; p <= ((m->words[i] + TRACE_TRAMPOLINE_BYTES - 1) & ~4095ull);
                 p += 4096) {
                int table_page = 0;
                for (int u = 0; u < mirror_count; u++)
                    if (p + 4096 > mirror[u].addr && p < mirror[u].addr + 8ull * mirror[u].nwords) table_page = 1;
                mprotect((void *)(uintptr_t)p, 4096, PROT_READ | PROT_EXEC | (table_page ? PROT_WRITE : 0));
            }
        }
    }
    trace_logf("H", "mirror=%s tables=%d", path, mirror_count);
}
