/* ivcuda-integrity-oracle: answers cudart's integrity check (export table d4082055 slot 1)
 * for ONE guest process, as the host's driver answers it in a process like the guest's.
 *
 * Why a process of its own: for versions like 13002 the driver's answer covers the asking
 * process's pid, the asking thread's pthread_self(), the addresses of tables 6bd5fb6c and
 * d4082055 and of d4082055's slot-1 function (measured on the H200: docs/export-tables.md).
 * The cuda-server's own driver has none of the guest's. This oracle has the guest's pid (in a
 * PID namespace of its own), answers each question from a thread whose pthread_self() is the
 * asking guest thread's, and reports where its driver's tables are so that the guest puts its
 * copies there.
 *
 *   ivcuda-integrity-oracle --pid N [--driver PATH]
 *
 * started by the server (io.ivcuda.server.integrity), once per guest process. It enters a
 * user namespace mapping only its own ids (root without one when none can be made), then a
 * PID namespace in which it runs itself again (--serve) as pid N, with address-space
 * randomisation off so that every oracle of one driver reports the same addresses (a forked
 * guest child keeps its parent's placement and gets an oracle of its own). The served stage
 * loads the driver, cuInit, fetches the two tables, writes the ready record, then answers
 * requests (oracle_proto.h) on stdin/stdout until stdin ends. Messages go to stderr.
 * Any failure is a ready record with a status and a message: never a silent exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oracle_proto.h"
#include "pidns.h"
#include "thread_at.h"
#include "userns.h"

extern char **environ;

#define PID_MAX 4194304 /* the kernel's largest pid_max */
/* Highest user-space address on x86-64 with 4-level paging: a thread descriptor above it
 * is not the guest's. */
#define USER_TOP 0x00007ffffffff000ull
/* the first 2 MiB: no thread descriptor with a stack below it can be there (a non-PIE
 * program's heap, where a static program's main thread has its descriptor, starts above) */
#define USER_BOTTOM 0x0000000000200000ull
/* glibc aligns struct pthread to 64 bytes */
#define THREAD_ALIGN 64

static const uint8_t CUDART_UUID[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                         0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
static const uint8_t INTEGRITY_UUID[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                            0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };

typedef int (*init_fn)(unsigned);
typedef int (*get_table_fn)(const void **, const uint8_t *);
typedef int (*integrity_fn)(unsigned, uint64_t, uint8_t *);

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

/* 1: n bytes read; 0: the end (or a partial record, which is the end too) */
static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        c += r, n -= (size_t)r;
    }
    return 1;
}

/* The one ready record: success with the addresses, or a status and why. */
static int ready(struct oracle_ready *r, int status, const char *message)
{
    r->magic = ORACLE_MAGIC;
    r->status = status;
    r->pid = (uint32_t)getpid();
    snprintf(r->message, sizeof r->message, "%s", message);
    if (status != ORACLE_OK) fprintf(stderr, "ivcuda-integrity-oracle: %s\n", message);
    return write_all(1, r, sizeof *r) == 0 && status == ORACLE_OK ? 0 : 1;
}

/* ---- the served stage: pid N, the driver, the answers ---------------------------------------- */

static integrity_fn slot1;

struct question {
    const struct oracle_request *q;
    int rc;
    uint8_t out[64]; /* the driver is given more than 16 bytes: a larger write is not ours to judge */
};

static void ask(void *p)
{
    struct question *c = p;
    c->rc = slot1(c->q->version, c->q->seconds, c->out);
}

/* A thread descriptor address the guest declared: canonical user space, glibc's alignment. */
static int plausible_thread(uint64_t t)
{
    return t >= USER_BOTTOM && t < USER_TOP && t % THREAD_ALIGN == 0;
}

static void answer(const struct oracle_request *q, struct oracle_reply *r)
{
    memset(r, 0, sizeof *r);
    r->magic = ORACLE_MAGIC;
    if (q->magic != ORACLE_MAGIC || !plausible_thread(q->thread)) {
        r->status = ORACLE_BAD_REQUEST;
        return;
    }
    struct question c = { .q = q };
    char err[160];
    if (thread_at_run(q->thread, ask, &c, err, sizeof err) != 0) {
        fprintf(stderr, "ivcuda-integrity-oracle: pid %d: %s\n", (int)getpid(), err);
        r->status = ORACLE_NO_THREAD;
        return;
    }
    r->driver_rc = c.rc;
    r->status = c.rc == 0 ? ORACLE_OK : ORACLE_DRIVER_FAILED;
    if (c.rc == 0) memcpy(r->answer, c.out, 16);
}

static const uint64_t *table(get_table_fn get, const uint8_t *uuid)
{
    const void *t = NULL;
    return get(&t, uuid) == 0 ? t : NULL;
}

static int serve(const char *driver)
{
    struct oracle_ready r = { 0 };
    char why[160];
    void *h = dlopen(driver, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof why, "cannot load %s: %s", driver, dlerror());
        return ready(&r, ORACLE_NO_DRIVER, why);
    }
    init_fn cu_init = (init_fn)dlsym(h, "cuInit");
    get_table_fn get = (get_table_fn)dlsym(h, "cuGetExportTable");
    if (!cu_init || !get) return ready(&r, ORACLE_NO_DRIVER, "the driver has no cuInit or cuGetExportTable");
    r.driver_rc = cu_init(0);
    if (r.driver_rc != 0) {
        snprintf(why, sizeof why, "cuInit(0) answered %d", r.driver_rc);
        return ready(&r, ORACLE_NO_DRIVER, why);
    }
    const uint64_t *cudart = table(get, CUDART_UUID), *integrity = table(get, INTEGRITY_UUID);
    /* size words as driver 580 has them (104 and 24 bytes); anything far off is not the layout
     * docs/export-tables.md describes */
    if (!cudart || !integrity || cudart[0] < 16 || cudart[0] > 4096 || integrity[0] < 16 || integrity[0] > 4096 ||
        !integrity[1])
        return ready(&r, ORACLE_NO_TABLES, "the driver has no usable tables 6bd5fb6c and d4082055");
    slot1 = (integrity_fn)(uintptr_t)integrity[1];
    r.cudart_table = (uint64_t)(uintptr_t)cudart;
    r.cudart_bytes = cudart[0];
    r.integrity_table = (uint64_t)(uintptr_t)integrity;
    r.integrity_bytes = integrity[0];
    r.integrity_slot1 = integrity[1];
    if (ready(&r, ORACLE_OK, "") != 0) return 1;
    struct oracle_request q;
    while (read_all(0, &q, sizeof q)) {
        struct oracle_reply a;
        answer(&q, &a);
        if (write_all(1, &a, sizeof a) != 0) return 1;
    }
    return 0;
}

/* ---- the launcher: namespaces, then the served stage as pid N -------------------------------- */

/* 1 when a user namespace can be made here; else 0 with the reason in err */
static int userns_works(char *err, size_t errlen)
{
    int p[2];
    if (pipe(p) != 0) return 0;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        char why[160] = "";
        int ok = userns_enter(why, sizeof why) == 0;
        (void)!write(p[1], why, strlen(why) + 1);
        _exit(ok ? 0 : 1);
    }
    close(p[1]);
    ssize_t n = child > 0 ? read(p[0], err, errlen - 1) : -1;
    err[n > 0 ? n : 0] = 0;
    close(p[0]);
    int status = -1;
    if (child > 0) waitpid(child, &status, 0);
    return child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int launch(long pid, const char *driver)
{
    struct oracle_ready r = { 0 };
    char why[160], self[4096];
    if (pid < 1 || pid > PID_MAX) {
        snprintf(why, sizeof why, "pid %ld is not a pid", pid);
        return ready(&r, ORACLE_NO_PID, why);
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return ready(&r, ORACLE_NO_NAMESPACE, "cannot find this program (/proc/self/exe)");
    self[n] = 0;
    /* root has the capabilities a PID namespace needs without a user namespace: it goes without
     * one only where none can be made (tried in a child first: a half-made one cannot be left) */
    if (geteuid() == 0 && !userns_works(why, sizeof why)) {
        fprintf(stderr, "ivcuda-integrity-oracle: %s; as root without one\n", why);
    } else if (userns_enter(why, sizeof why) != 0) {
        return ready(&r, ORACLE_NO_NAMESPACE, why);
    }
    /* inherited through execve: the served stage's driver lands where every oracle's does */
    if (personality(PER_LINUX | ADDR_NO_RANDOMIZE) < 0)
        fprintf(stderr, "ivcuda-integrity-oracle: randomisation stays on: %s\n", strerror(errno));
    char *args[] = { self, "--serve", "--driver", (char *)driver, NULL };
    pid_t init = pidns_spawn((pid_t)pid, self, args, environ);
    if (init < 0) {
        snprintf(why, sizeof why, "no PID namespace: %s", strerror(errno));
        return ready(&r, ORACLE_NO_NAMESPACE, why);
    }
    int status;
    while (waitpid(init, &status, 0) < 0)
        if (errno != EINTR) return 1;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    /* the served stage exits 0 or 1 and wrote its ready record; these say it never ran */
    if (code == PIDNS_EXIT_NO_PID) {
        snprintf(why, sizeof why, "the PID namespace could not give pid %ld (in use or refused)", pid);
        return ready(&r, ORACLE_NO_PID, why);
    }
    if (code == PIDNS_EXIT_NO_EXEC) return ready(&r, ORACLE_NO_NAMESPACE, "cannot start the served stage");
    return code;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* a server gone is a failed write, then the end */
    long pid = 0;
    const char *driver = "libcuda.so.1";
    int serving = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0) {
            serving = 1;
        } else if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) {
            char *end;
            pid = strtol(argv[++i], &end, 10);
            if (*end) pid = -1;
        } else if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc) {
            driver = argv[++i];
        } else {
            fprintf(stderr, "usage: %s --pid N [--driver PATH]\n", argv[0]);
            return 2;
        }
    }
    if (serving) {
        /* nothing the driver starts may gain privileges; the stage keeps none it does not need */
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        return serve(driver);
    }
    return launch(pid, driver);
}
