/* Plays cudart against ivcuda's guest libcuda.so.1 whose server's integrity oracles run the MOCK
 * driver (host-tools/test/mock_libcuda.c): asks for tables 6bd5fb6c and d4082055 as cudart does,
 * computes the mock's answer (host-tools/test/mock_check.h) from the tables it was handed, this
 * pid and the asking thread, and compares it with what d4082055 slot 1 answers — from the main
 * thread, a second thread and a forked child. The answer matches only if the guest placed its
 * tables at the oracle's addresses and the oracle asked as this pid from this thread.
 * Prints one line per check; exit 0 when all passed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mock_check.h"

typedef struct {
    unsigned char bytes[16];
} uuid16;
int cuInit(unsigned flags);
int cuGetExportTable(const void **table, const uuid16 *id);
typedef int (*integrity_fn)(unsigned, uint64_t, uint8_t *);

static const uuid16 CUDART = { { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd,
                                 0x9d, 0xf9 } };
static const uuid16 INTEGRITY = { { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c,
                                    0x66, 0xe1, 0xf2 } };
static const uint64_t *cudart, *integrity;

/* 1 when slot 1 answers what the mock computes here */
static int matches(unsigned version)
{
    uint64_t now = (uint64_t)time(NULL);
    uint8_t got[16], want[16];
    int rc = ((integrity_fn)(uintptr_t)integrity[1])(version, now, got);
    mock_check(version, now, cudart, integrity, want);
    return rc == 0 && memcmp(got, want, 16) == 0;
}

static void *second(void *unused)
{
    (void)unused;
    return (void *)(intptr_t)matches(13002);
}

static int report(int ok, const char *what)
{
    printf("%s %s (pid %d)\n", ok ? "ok  " : "FAIL", what, (int)getpid());
    return ok;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ok = report(cuInit(0) == 0, "cuInit");
    ok &= report(cuGetExportTable((const void **)&cudart, &CUDART) == 0 &&
                     cuGetExportTable((const void **)&integrity, &INTEGRITY) == 0 && cudart && integrity,
                 "tables 6bd5fb6c and d4082055 handed out");
    if (!ok)
        return 1;
    printf("     6bd5fb6c at %p, d4082055 at %p, slot 1 %llx\n", (const void *)cudart, (const void *)integrity,
           (unsigned long long)integrity[1]);
    ok &= report(matches(13000), "13000 (the per-driver constant)");
    ok &= report(matches(13002), "13002 from the main thread");
    pthread_t th;
    void *second_ok = NULL;
    pthread_create(&th, NULL, second, NULL);
    pthread_join(th, &second_ok);
    ok &= report(second_ok != NULL, "13002 from a second thread");
    pid_t child = fork();
    if (child == 0) /* exit, not _exit: the library tells the server the child is gone (its oracle goes) */
        exit(report(matches(13002), "13002 from a forked child (its own oracle)") ? 0 : 1);
    int status = -1;
    waitpid(child, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ok &= report(matches(13002), "13002 from the main thread after the fork");
    return ok ? 0 : 1;
}
