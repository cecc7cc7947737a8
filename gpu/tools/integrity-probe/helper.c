/* integrity-helper: NVIDIA's driver in a process of its own, standing in for ivcuda's
 * cuda-server (which loads the driver in the host's JVM and answers the integrity check the
 * guest forwards). It loads the driver, asks for the export tables in cudart's order, writes
 * down where each table is and what its words are (<socket>.tables, the description
 * cuda-trace's mirror modes place tables from), and then answers, over a SOCK_SEQPACKET
 * socket, the integrity check (d4082055 slot 1) and replays context checks slot 3 for the
 * shim (cuda-trace/remote_proto.h). Every request is written to stdout.
 *
 *   integrity-helper <driver libcuda.so.1> <socket path>
 *
 * The description is written after the socket listens: its appearance means ready. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "known_tables.h"
#include "remote_proto.h"
#include "trace.h"

#define NOSIZE_WORDS 16
#define GUARD 0xa5

typedef int (*init_fn)(unsigned);
typedef int (*get_table_fn)(const void **, const uint8_t *);
typedef int (*integrity_fn)(unsigned, uint64_t, uint8_t *);
typedef int (*six_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

static const uint64_t *tables[KNOWN_TABLE_COUNT];
static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;

static void hex(char *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
}

static int looks_like_size(uint64_t w) { return w >= 16 && w <= 4096 && w % 8 == 0; }

static const char *kind_of(uint64_t v, int size_word)
{
    if (size_word) return "size";
    if (v == 0) return "null";
    if (trace_is_code(v)) return "code";
    uint8_t b;
    return trace_safe_read(&b, v, 1) == 1 ? "data" : "value";
}

static int describe(const char *path, void *driver)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    Dl_info info;
    void *any = dlsym(driver, "cuInit");
    fprintf(f, "# integrity-helper pid=%d libcuda=%lx\n", (int)getpid(),
            any && dladdr(any, &info) ? (unsigned long)(uintptr_t)info.dli_fbase : 0ul);
    for (size_t t = 0; t < KNOWN_TABLE_COUNT; t++) {
        const uint64_t *w = tables[t];
        if (!w) continue;
        char u[33];
        hex(u, known_tables[t].uuid, 16);
        int has_size = looks_like_size(w[0]);
        unsigned n = has_size ? (unsigned)(w[0] / 8) : NOSIZE_WORDS;
        fprintf(f, "T %s %lx %u %d\n", u, (unsigned long)(uintptr_t)w, n, has_size);
        for (unsigned i = 0; i < n; i++)
            fprintf(f, "W %s %u %lx %s\n", u, i, (unsigned long)w[i], kind_of(w[i], has_size && i == 0));
    }
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}

static pid_t peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : -1;
}

static void answer(const struct remote_request *q, struct remote_reply *r, pid_t peer)
{
    r->magic = REMOTE_MAGIC;
    r->helper_pid = (uint32_t)getpid();
    r->rc = 999;
    if (q->magic != REMOTE_MAGIC) return;
    if (q->op == REMOTE_PING) {
        r->rc = 0;
    } else if (q->op == REMOTE_INTEGRITY && tables[KT_INTEGRITY]) {
        uint8_t out[64];
        memset(out, GUARD, sizeof out);
        pthread_mutex_lock(&driver_lock);
        r->rc = ((integrity_fn)(uintptr_t)tables[KT_INTEGRITY][1])(q->version, q->seconds, out);
        pthread_mutex_unlock(&driver_lock);
        memcpy(r->answer, out, 16);
        for (int i = 16; i < 64; i++) r->overrun += out[i] != GUARD;
        char h[33];
        hex(h, out, 16);
        printf("integrity peer=%d version=%u seconds=%lu rc=%d answer=%s overrun=%u\n", (int)peer, q->version,
               (unsigned long)q->seconds, r->rc, h, r->overrun);
    } else if (q->op == REMOTE_SLOT3 && tables[KT_CHECKS] && q->len <= sizeof q->data) {
        uint8_t copy[64];
        memcpy(copy, q->data, sizeof copy);
        pthread_mutex_lock(&driver_lock);
        r->rc = ((six_fn)(uintptr_t)tables[KT_CHECKS][3])((uint64_t)(uintptr_t)copy, q->len, 0, 0, 0, 0);
        pthread_mutex_unlock(&driver_lock);
        char h[129];
        hex(h, q->data, q->len);
        printf("slot3 peer=%d len=%u rc=%d data=%s\n", (int)peer, q->len, r->rc, h);
    }
    fflush(stdout);
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    pid_t peer = peer_pid(fd);
    struct remote_request q;
    while (recv(fd, &q, sizeof q, 0) == (ssize_t)sizeof q) {
        struct remote_reply r = { 0 };
        answer(&q, &r, peer);
        if (send(fd, &r, sizeof r, MSG_NOSIGNAL) != (ssize_t)sizeof r) break;
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s <driver libcuda.so.1> <socket path>\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "integrity-helper: %s\n", dlerror());
        return 1;
    }
    init_fn cu_init = (init_fn)dlsym(h, "cuInit");
    get_table_fn get_table = (get_table_fn)dlsym(h, "cuGetExportTable");
    if (!cu_init || !get_table) {
        fprintf(stderr, "integrity-helper: no cuInit/cuGetExportTable in %s\n", argv[1]);
        return 1;
    }
    for (size_t t = 0; t < KNOWN_TABLE_COUNT; t++) {
        if (t == KT_FIRST + 1) printf("cuInit rc=%d\n", cu_init(0));
        const void *table = NULL;
        int rc = get_table(&table, known_tables[t].uuid);
        tables[t] = rc == 0 ? table : NULL;
        char u[33];
        hex(u, known_tables[t].uuid, 16);
        printf("table %s rc=%d addr=%lx (%s)\n", u, rc, (unsigned long)(uintptr_t)table, known_tables[t].name);
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(argv[2]) >= sizeof a.sun_path) {
        fprintf(stderr, "integrity-helper: socket path too long\n");
        return 1;
    }
    strcpy(a.sun_path, argv[2]);
    unlink(argv[2]);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0) {
        fprintf(stderr, "integrity-helper: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    char desc[4200];
    snprintf(desc, sizeof desc, "%s.tables", argv[2]);
    if (describe(desc, h) != 0) {
        fprintf(stderr, "integrity-helper: cannot write %s\n", desc);
        return 1;
    }
    printf("ready pid=%d socket=%s\n", (int)getpid(), argv[2]);
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) continue;
            break;
        }
        pthread_t th;
        if (pthread_create(&th, NULL, serve, (void *)(intptr_t)c) == 0)
            pthread_detach(th);
        else
            close(c);
    }
    return 0;
}
