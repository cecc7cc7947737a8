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
 * The description is written after the socket listens: its appearance means ready.
 *
 *   integrity-helper --oracles <driver libcuda.so.1> <socket path>
 *
 * An oracle helper: it holds no driver itself. Each connection's first request
 * (REMOTE_OPEN: the asking process's pid, ORACLE_* flags) starts an oracle for it — this
 * program again (--oracle-of), holding the driver in a process of its own: with the asker's
 * pid in a PID namespace of its own (ORACLE_PID, pidns.h), answering each integrity call in
 * a thread whose pthread_self() is the asking thread's (ORACLE_SELF, thread_at.h), with the
 * asker's stack guard, pointer guard and AT_RANDOM bytes (ORACLE_GUARDS). The oracle
 * describes its tables in <socket>.<pid>.tables, answers the REMOTE_OPEN, then serves the
 * connection; it ends when the connection does. <socket>.ready means the helper listens.
 * Built without stack protection (Makefile): the guards are changed around the call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "known_tables.h"
#include "pidns.h"
#include "remote_proto.h"
#include "thread_at.h"
#include "thread_words.h"
#include "trace.h"

extern char **environ;

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

/* ---- the integrity call, as like the asking thread as the oracle's flags say ---------------- */

static unsigned oracle_flags; /* ORACLE_*: 0 in the plain helper */

struct integrity_call {
    const struct remote_request *q;
    uint8_t out[64];
    int rc;
    long tid;
    uint64_t self;
};

/* Runs in the thread that asks the driver. With ORACLE_GUARDS the asker's guards are this
 * thread's for the call: frames entered and left during it check against them; this file has
 * no stack protection, so its own frames do not check. */
static void call_integrity(void *p)
{
    struct integrity_call *c = p;
    const struct remote_request *q = c->q;
    uint64_t stack_guard = 0, pointer_guard = 0;
    uint8_t random_saved[16];
    uint8_t *random = (uint8_t *)(uintptr_t)getauxval(AT_RANDOM);
    int guards = (oracle_flags & ORACLE_GUARDS) != 0;
    c->tid = (long)syscall(SYS_gettid);
    c->self = (uint64_t)(uintptr_t)pthread_self();
    memset(c->out, GUARD, sizeof c->out);
    if (guards) {
        stack_guard = thread_word(THREAD_STACK_GUARD);
        pointer_guard = thread_word(THREAD_POINTER_GUARD);
        thread_set_word(THREAD_STACK_GUARD, q->stack_guard);
        thread_set_word(THREAD_POINTER_GUARD, q->pointer_guard);
        if (random) {
            memcpy(random_saved, random, 16);
            memcpy(random, q->at_random, 16);
        }
    }
    c->rc = ((integrity_fn)(uintptr_t)tables[KT_INTEGRITY][1])(q->version, q->seconds, c->out);
    if (guards) {
        thread_set_word(THREAD_STACK_GUARD, stack_guard);
        thread_set_word(THREAD_POINTER_GUARD, pointer_guard);
        if (random) memcpy(random, random_saved, 16);
    }
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
        struct integrity_call c = { .q = q };
        char err[200] = "";
        pthread_mutex_lock(&driver_lock);
        if ((oracle_flags & ORACLE_SELF) && q->self) {
            if (thread_at_run(q->self, call_integrity, &c, err, sizeof err) != 0) c.rc = 996;
        } else {
            call_integrity(&c);
        }
        pthread_mutex_unlock(&driver_lock);
        r->rc = c.rc;
        memcpy(r->answer, c.out, 16);
        for (int i = 16; i < 64; i++) r->overrun += c.out[i] != GUARD;
        char h[33];
        hex(h, c.out, 16);
        printf("integrity peer=%d version=%u seconds=%lu rc=%d answer=%s overrun=%u", (int)peer, q->version,
               (unsigned long)q->seconds, r->rc, h, r->overrun);
        if (oracle_flags)
            printf(" asker_pid=%u asker_tid=%u asker_self=%lx pid=%d tid=%ld self=%lx%s%s", q->pid, q->tid,
                   (unsigned long)q->self, (int)getpid(), c.tid, (unsigned long)c.self, err[0] ? " error=" : "", err);
        printf("\n");
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

/* The driver, cuInit, and the tables in cudart's order; NULL when it cannot be loaded. */
static void *load_driver(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "integrity-helper: %s\n", dlerror());
        return NULL;
    }
    init_fn cu_init = (init_fn)dlsym(h, "cuInit");
    get_table_fn get_table = (get_table_fn)dlsym(h, "cuGetExportTable");
    if (!cu_init || !get_table) {
        fprintf(stderr, "integrity-helper: no cuInit/cuGetExportTable in %s\n", path);
        return NULL;
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
    return h;
}

static int listen_on(const char *path)
{
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "integrity-helper: socket path too long\n");
        return -1;
    }
    strcpy(a.sun_path, path);
    unlink(path);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0) {
        fprintf(stderr, "integrity-helper: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return s;
}

/* ---- oracles ---------------------------------------------------------------------------------- */

static void reap(int sig)
{
    (void)sig;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

/* One connection of the oracle helper: its REMOTE_OPEN starts the oracle, which takes the
 * connection over; the helper keeps nothing of it. */
static void start_oracle(int fd, const char *self_path, const char *driver, const char *socket_path)
{
    struct remote_request q;
    struct timeval limit = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ssize_t n;
    do { /* SIGCHLD of an oracle that ended: a receive with a time limit is not restarted */
        n = recv(fd, &q, sizeof q, 0);
    } while (n < 0 && errno == EINTR);
    int err = errno;
    pid_t peer = peer_pid(fd);
    if (n != (ssize_t)sizeof q || q.magic != REMOTE_MAGIC || q.op != REMOTE_OPEN || q.pid == 0 || q.pid > 4194304) {
        struct remote_reply r = { .magic = REMOTE_MAGIC, .rc = 998, .helper_pid = (uint32_t)getpid() };
        send(fd, &r, sizeof r, MSG_NOSIGNAL);
        printf("oracle peer=%d refused: the first request is no REMOTE_OPEN with a pid (%zd bytes%s%s)\n", (int)peer,
               n, n < 0 ? ", " : "", n < 0 ? strerror(err) : "");
        close(fd);
        return;
    }
    struct timeval none = { 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    char fd_text[16], flags_text[16], desc[4200];
    snprintf(fd_text, sizeof fd_text, "%d", fd);
    snprintf(flags_text, sizeof flags_text, "%u", q.flags);
    snprintf(desc, sizeof desc, "%s.%u.tables", socket_path, q.pid);
    unlink(desc);
    char *args[] = { (char *)self_path, "--oracle-of", (char *)driver, fd_text, desc, flags_text, NULL };
    fcntl(fd, F_SETFD, 0); /* the oracle inherits the connection */
    pid_t child;
    if (q.flags & ORACLE_PID) {
        child = pidns_spawn((pid_t)q.pid, self_path, args, environ);
    } else {
        child = fork();
        if (child == 0) {
            execve(self_path, args, environ);
            _exit(PIDNS_EXIT_NO_EXEC);
        }
    }
    if (child < 0) {
        struct remote_reply r = { .magic = REMOTE_MAGIC, .rc = 997, .helper_pid = (uint32_t)getpid() };
        send(fd, &r, sizeof r, MSG_NOSIGNAL);
        printf("oracle peer=%d pid=%u flags=%u not started: %s\n", (int)peer, q.pid, q.flags, strerror(errno));
    } else {
        printf("oracle peer=%d pid=%u flags=%u started: %d\n", (int)peer, q.pid, q.flags, (int)child);
    }
    close(fd);
}

static int oracles_main(const char *driver, const char *socket_path)
{
    char self_path[4096];
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) {
        fprintf(stderr, "integrity-helper: /proc/self/exe: %s\n", strerror(errno));
        return 1;
    }
    self_path[n] = 0;
    struct sigaction sa = { .sa_handler = reap, .sa_flags = SA_RESTART };
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int s = listen_on(socket_path);
    if (s < 0) return 1;
    char ready[4200];
    snprintf(ready, sizeof ready, "%s.ready", socket_path);
    FILE *f = fopen(ready, "w");
    if (f) fclose(f);
    printf("ready oracles pid=%d socket=%s\n", (int)getpid(), socket_path);
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) continue;
            break;
        }
        start_oracle(c, self_path, driver, socket_path);
    }
    return 0;
}

/* The oracle: the driver, its tables described, the REMOTE_OPEN answered, then the
 * connection served until it closes. */
static int oracle_main(const char *driver, const char *fd_text, const char *desc, const char *flags_text)
{
    int fd = atoi(fd_text);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    oracle_flags = (unsigned)strtoul(flags_text, NULL, 10) | 0x80000000u; /* nonzero: an oracle */
    printf("oracle pid=%d flags=%s\n", (int)getpid(), flags_text);
    struct remote_reply r = { .magic = REMOTE_MAGIC, .rc = 999, .helper_pid = (uint32_t)getpid() };
    void *h = load_driver(driver);
    if (h && describe(desc, h) == 0) r.rc = 0;
    else if (h) fprintf(stderr, "integrity-helper: cannot write %s\n", desc);
    if (send(fd, &r, sizeof r, MSG_NOSIGNAL) != (ssize_t)sizeof r || r.rc != 0) return 1;
    serve((void *)(intptr_t)fd);
    printf("oracle pid=%d done\n", (int)getpid());
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "--oracles") == 0) return oracles_main(argv[2], argv[3]);
    if (argc == 6 && strcmp(argv[1], "--oracle-of") == 0) return oracle_main(argv[2], argv[3], argv[4], argv[5]);
    if (argc != 3) {
        fprintf(stderr, "usage: %s <driver libcuda.so.1> <socket path>\n"
                        "       %s --oracles <driver libcuda.so.1> <socket path>\n", argv[0], argv[0]);
        return 2;
    }
    void *h = load_driver(argv[1]);
    if (!h) return 1;
    int s = listen_on(argv[2]);
    if (s < 0) return 1;
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
