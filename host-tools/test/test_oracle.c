/* ivcuda-integrity-oracle against the MOCK driver (mock_libcuda.c, mock_check.h), playing the
 * server: starts an oracle for this process's pid, asks it as this process's threads would,
 * and compares with the mock computed here from the addresses the oracle reported, this
 * pid and these threads. A wrong pid, thread or table address in the oracle gives another
 * answer. Also: a forked child's own oracle (same addresses: randomisation is off in every
 * oracle), requests the oracle must refuse, and startups that must fail with a message.
 *   test_oracle <oracle> <mock libcuda.so.1>
 * Exit 0: passed; 1: a check failed; 77: namespaces unavailable here (says why, one line). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mock_check.h"
#include "oracle_proto.h"

static const char *oracle_path, *driver_path;
static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            printf("ok   ");                                                                                           \
        } else {                                                                                                       \
            printf("FAIL ");                                                                                           \
            failures++;                                                                                                \
        }                                                                                                              \
        printf(__VA_ARGS__);                                                                                           \
        printf("\n");                                                                                                  \
    } while (0)

struct oracle {
    pid_t pid;
    int to, from;
    struct oracle_ready ready;
};

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

/* 0 with o->ready read, -1 when no ready record came */
static int start(struct oracle *o, const char *pid, const char *driver)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    o->pid = fork();
    if (o->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(oracle_path, oracle_path, "--pid", pid, "--driver", driver, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    o->to = in[1];
    o->from = out[0];
    memset(&o->ready, 0, sizeof o->ready);
    return read_all(o->from, &o->ready, sizeof o->ready);
}

static int finish(struct oracle *o)
{
    close(o->to);
    close(o->from);
    int status = -1;
    waitpid(o->pid, &status, 0);
    return status;
}

static int ask(struct oracle *o, unsigned version, uint64_t seconds, uint64_t thread, struct oracle_reply *r)
{
    struct oracle_request q = { ORACLE_MAGIC, version, seconds, thread };
    return write(o->to, &q, sizeof q) == (ssize_t)sizeof q ? read_all(o->from, r, sizeof *r) : -1;
}

/* asks as the calling thread and compares with the mock computed here */
static int answers_like_mock(struct oracle *o, unsigned version)
{
    uint64_t now = (uint64_t)time(NULL);
    struct oracle_reply r;
    uint8_t want[16];
    if (ask(o, version, now, (uint64_t)(uintptr_t)pthread_self(), &r) != 0 || r.status != ORACLE_OK) return 0;
    /* the guest's copies are placed at the oracle's addresses, with the oracle's slot-1 word */
    mock_check_at(version, now, o->ready.cudart_table, o->ready.integrity_table, o->ready.integrity_slot1, want);
    return memcmp(r.answer, want, 16) == 0;
}

static void *second_thread(void *p)
{
    return (void *)(intptr_t)answers_like_mock(p, 13002);
}

static int refused(struct oracle *o, uint64_t thread, uint32_t magic, int status)
{
    struct oracle_request q = { magic, 13002, 1, thread };
    struct oracle_reply r;
    if (write(o->to, &q, sizeof q) != (ssize_t)sizeof q || read_all(o->from, &r, sizeof r) != 0) return 0;
    return r.status == status;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s <oracle> <mock libcuda.so.1>\n", argv[0]);
        return 2;
    }
    oracle_path = argv[1];
    driver_path = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    struct oracle o;
    if (start(&o, pid, driver_path) != 0) {
        printf("FAIL the oracle wrote no ready record\n");
        return 1;
    }
    if (o.ready.status == ORACLE_NO_NAMESPACE) {
        printf("skip the oracle cannot run here: %s\n", o.ready.message);
        finish(&o);
        return 77;
    }
    CHECK(o.ready.magic == ORACLE_MAGIC && o.ready.status == ORACLE_OK, "ready (status %d: %s)", o.ready.status,
          o.ready.message);
    CHECK(o.ready.pid == (uint32_t)getpid(), "the oracle runs as this pid (%u)", o.ready.pid);
    CHECK(o.ready.cudart_bytes == 104 && o.ready.integrity_bytes == 24 && o.ready.integrity_slot1,
          "the tables' sizes and the slot-1 address reported");
    CHECK(answers_like_mock(&o, 13002), "13002 from the main thread: the mock's answer for this pid and thread");
    CHECK(answers_like_mock(&o, 13000), "13000: the per-driver constant");
    pthread_t th;
    void *ok = NULL;
    pthread_create(&th, NULL, second_thread, &o);
    pthread_join(th, &ok);
    CHECK(ok != NULL, "13002 from a second thread: its own pthread_self()'s answer");
    CHECK(answers_like_mock(&o, 13002), "the main thread again (its thread place reused)");

    CHECK(refused(&o, 0x0000800000000000ull, ORACLE_MAGIC, ORACLE_BAD_REQUEST), "a thread above user space refused");
    CHECK(refused(&o, (uint64_t)(uintptr_t)pthread_self() + 8, ORACLE_MAGIC, ORACLE_BAD_REQUEST),
          "an unaligned thread refused");
    CHECK(refused(&o, 0x1000, ORACLE_MAGIC, ORACLE_BAD_REQUEST), "a thread in the first pages refused");
    CHECK(refused(&o, (uint64_t)(uintptr_t)pthread_self(), 0x1234, ORACLE_BAD_REQUEST), "a wrong magic refused");
    CHECK(refused(&o, o.ready.integrity_table & ~63ull, ORACLE_MAGIC, ORACLE_NO_THREAD),
          "a thread where the oracle's driver is: no thread there, refused");
    CHECK(answers_like_mock(&o, 13002), "still answering after the refusals");

    /* a forked child: another pid, an oracle of its own, the parent's addresses */
    pid_t child = fork();
    if (child == 0) {
        char mine[16];
        snprintf(mine, sizeof mine, "%d", (int)getpid());
        struct oracle c;
        int good = start(&c, mine, driver_path) == 0 && c.ready.status == ORACLE_OK &&
                   c.ready.pid == (uint32_t)getpid() && c.ready.cudart_table == o.ready.cudart_table &&
                   c.ready.integrity_table == o.ready.integrity_table &&
                   c.ready.integrity_slot1 == o.ready.integrity_slot1 && answers_like_mock(&c, 13002);
        finish(&c);
        _exit(good ? 0 : 1);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "a forked child: its own oracle (its pid), the parent's addresses, its answer");

    status = finish(&o);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the oracle ends when its input does (status %d)", status);

    struct oracle bad;
    CHECK(start(&bad, "0", driver_path) == 0 && bad.ready.status == ORACLE_NO_PID && bad.ready.message[0],
          "pid 0 refused with a message (%s)", bad.ready.message);
    finish(&bad);
    CHECK(start(&bad, pid, "/nonexistent/libcuda.so.1") == 0 && bad.ready.status == ORACLE_NO_DRIVER &&
              strstr(bad.ready.message, "cannot load"),
          "a driver that is not there: refused with a message (%s)", bad.ready.message);
    finish(&bad);

    printf(failures ? "test_oracle: %d FAILED\n" : "test_oracle: PASSED\n", failures);
    return failures ? 1 : 0;
}
