/* Drives cuda-trace over the fake driver as cudart and the libraries drive the real one:
 * direct calls to exported names (one with stack arguments), dlopen("libcuda.so.1") +
 * dlsym("cuGetProcAddress_v2") + lookups, both export tables (calls with stack arguments,
 * 16-byte results, doubles, a variadic call, a callback that calls back into the driver,
 * a longjmp out of a traced call, recursion deeper than the return-tracking stack),
 * threads, and a forked child. Every result is checked against what the fake computes, so
 * a trampoline that loses a register fails here. usage: trace_test <dir of the shim> */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_abi.h"

/* Linked directly: these resolve to the shim (it is libcuda.so.1 on LD_LIBRARY_PATH). */
int cuInit(unsigned flags);
int cuDriverGetVersion(int *v);
int cuDeviceGet(int *dev, int ordinal);
int cuLaunchKernel(uint64_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shmem, uint64_t stream, void **params, void **extra);
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);
int cuGetExportTable(const void **table, const void *uuid);

typedef int (*gpa_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*get_table_fn)(const void **, const void *);

static int failures;

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (cond) {                                                                                                   \
            printf("ok   ");                                                                                          \
        } else {                                                                                                      \
            printf("FAIL ");                                                                                          \
            failures++;                                                                                               \
        }                                                                                                             \
        printf(__VA_ARGS__);                                                                                          \
        printf("\n");                                                                                                 \
    } while (0)

static const struct fake_nosize_table *nosize;
static int (*device_get)(int *, int);
static jmp_buf escape;

static int calls_driver(void *arg)
{
    int dev = -1;
    int rc = device_get(&dev, 0);
    return rc == 0 && dev == 0 ? *(int *)arg : -1;
}

static int jumps_out(void *arg)
{
    (void)arg;
    longjmp(escape, 1);
}

/* Inside a traced call: a nested traced call is left by longjmp, then the outer returns. */
static int jumps_inside(void *arg)
{
    (void)arg;
    if (setjmp(escape) == 0) {
        nosize->call_back(jumps_out, NULL);
        return -1;
    }
    return 3;
}

static int recurse(void *arg)
{
    int *left = arg;
    if (*left == 0) return 0;
    (*left)--;
    return nosize->call_back(recurse, arg);
}

static void *thread_main(void *arg)
{
    long bad = 0;
    for (int i = 0; i < 5000; i++) {
        int dev = -1;
        if (cuDeviceGet(&dev, 0) != 0 || dev != 0) bad++;
        if (device_get(&dev, 1) != 101) bad++;
    }
    *(long *)arg = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <shim dir>\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int v = 0;
    CHECK(cuInit(0) == 0 && cuInit(5) == 1, "direct cuInit forwards its argument");
    CHECK(cuDriverGetVersion(&v) == 0 && v == FAKE_DRIVER_VERSION, "direct cuDriverGetVersion writes %d", v);
    void *params = (void *)0x1234, *extra = (void *)0x5678;
    int want = fake_launch_result(0xabcdef, 1, 2, 3, 4, 5, 6, 7, 0x77, params, extra);
    int got = cuLaunchKernel(0xabcdef, 1, 2, 3, 4, 5, 6, 7, 0x77, params, extra);
    CHECK(got == want, "cuLaunchKernel's eleven arguments (five on the stack) arrive: %d == %d", got, want);

    /* cudart's way in */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen(libcuda.so.1)");
    if (!h) return 1;
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    Dl_info info;
    CHECK(gpa == cuGetProcAddress_v2 && dladdr((void *)gpa, &info) && strstr(info.dli_fname, argv[1]),
          "dlopen(libcuda.so.1) finds the shim (%s), not the driver of the same SONAME", gpa ? info.dli_fname : "?");

    int (*missing)(void) = (int (*)(void))dlsym(h, "cuArrayCreate");
    CHECK(missing && missing() == 801, "a listed name the driver lacks answers CUDA_ERROR_NOT_SUPPORTED");

    int status = -1;
    void *p = NULL;
    CHECK(gpa("", &p, 0, 0, NULL) == FAKE_NOT_FOUND, "the empty-name probe is answered by the driver");
    uint64_t dptr = 0;
    CHECK(gpa("cuMemAlloc", &p, 3020, 0, &status) == 0 && status == 0 &&
              ((int (*)(uint64_t *, size_t))p)(&dptr, 16) == 0 && dptr == 0x200000 + 16,
          "cuMemAlloc@3020 reaches cuMemAlloc_v2 through the shim");
    CHECK(gpa("cuMemAlloc", &p, 2000, 0, NULL) == 0 && ((int (*)(uint64_t *, size_t))p)(&dptr, 16) == 0 &&
              dptr == 0x1000 + 16,
          "cuMemAlloc@2000 reaches cuMemAlloc");
    CHECK(gpa("cuMemcpy", &p, 4000, 2, NULL) == 0 && ((int (*)(uint64_t, uint64_t, size_t))p)(1, 2, 3) == 7,
          "cuMemcpy with flags=2 reaches the _ptds variant");
    CHECK(gpa("cuFakeHidden", &p, 12000, 0, NULL) == 0 && ((int (*)(int))p)(14) == 42,
          "a function the driver does not export is reached through a pool stub");
    void *again = NULL;
    CHECK(gpa("cuFakeHidden", &again, 12000, 0, NULL) == 0 && again == p, "the same function gets the same stub");
    CHECK(gpa("cuGetProcAddress", &p, 12000, 0, NULL) == 0 && p == (void *)gpa,
          "asked for cuGetProcAddress, the caller gets the shim's");
    get_table_fn get_table = NULL;
    CHECK(gpa("cuGetExportTable", (void **)&get_table, 3000, 0, NULL) == 0 && get_table == cuGetExportTable,
          "asked for cuGetExportTable, the caller gets the shim's");
    CHECK(gpa("cuNope", &p, 12000, 0, &status) == FAKE_NOT_FOUND && status == 1, "an unknown name fails as the driver says");
    CHECK(gpa("cuDeviceGet", (void **)&device_get, 2000, 0, NULL) == 0, "cuDeviceGet looked up");

    /* the sized table */
    const struct fake_sized_table *t = NULL, *t2 = NULL;
    CHECK(get_table((const void **)&t, FAKE_SIZED_UUID) == 0 && t != NULL, "sized table");
    if (!t) return 1;
    CHECK(get_table((const void **)&t2, FAKE_SIZED_UUID) == 0 && t2 == t, "asked twice, the same copy");
    CHECK(t->size == sizeof *t && t->unused == NULL && strcmp(t->data, "fake driver data") == 0,
          "the size word, a NULL slot and a data slot are copied as they are");
    uint8_t out[16] = { 0 };
    int ok = t->scale(13001, out) == 0;
    for (int i = 0; i < 16; i++) ok = ok && out[i] == (uint8_t)(13001 * (i + 1));
    CHECK(ok, "slot 1 writes its 16 bytes through the copy");
    struct fake_pair w = t->wide(1, 2, 3, 4, 5, 6, 7, 8);
    CHECK(w.lo == 36 && w.hi == (1 ^ 8 ^ (7 << 1)), "a slot with 8 arguments returns 16 bytes: %lu %lu",
          (unsigned long)w.lo, (unsigned long)w.hi);
    uint64_t written = 0;
    t->wide(40, 2, 3, 4, 5, 6, (uint64_t)(uintptr_t)&written, 8);
    CHECK(written == 42, "a slot writes through a pointer passed on the stack");
    double m = t->mix(2, 1.5, 2.5, 3, 0.25);
    CHECK(m == 10.25, "doubles in vector registers arrive and return: %g", m);
    double s = t->vsum(3, 1.0, 2.0, 4.5);
    CHECK(s == 7.5, "a variadic slot: %g", s);

    /* the table without a size word */
    CHECK(get_table((const void **)&nosize, FAKE_NOSIZE_UUID) == 0 && nosize != NULL, "table without a size word");
    if (!nosize) return 1;
    int x = 7;
    void *value = NULL;
    CHECK(nosize->put(42, &x) == 0 && nosize->get(42, &value) == 0 && value == &x, "put then get");
    int five = 5;
    CHECK(nosize->call_back(calls_driver, &five) == 1005, "a slot calls back into the program, which calls the driver");
    if (setjmp(escape) == 0) {
        nosize->call_back(jumps_out, NULL);
        CHECK(0, "longjmp came back");
    } else {
        CHECK(t->scale(13002, out) == 0 && out[1] == (uint8_t)(13002 * 2), "a traced call after a longjmp out of one");
    }
    CHECK(nosize->call_back(jumps_inside, NULL) == 1003, "a traced call returns after a longjmp out of a nested one");
    int depth = 80;
    int nested = nosize->call_back(recurse, &depth);
    CHECK(nested == 81000, "81 nested traced calls (deeper than the return stack): %d", nested);

    /* a program writing into a table it was given (the driver would not see it) */
    ((struct fake_sized_table *)(uintptr_t)t)->unused = (void *)0x1234;

    const void *none = (const void *)1;
    CHECK(get_table(&none, FAKE_UNKNOWN_UUID) == FAKE_NOT_FOUND && none == NULL, "an unknown UUID");

    /* threads */
    pthread_t th[8];
    long bad[8] = { 0 };
    for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, thread_main, &bad[i]);
    long total_bad = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        total_bad += bad[i];
    }
    CHECK(total_bad == 0, "8 threads x 10000 calls");

    /* fork: the child traces into its own file */
    pid_t child = fork();
    if (child == 0) {
        int (*init)(unsigned) = NULL;
        _exit(gpa("cuInit", (void **)&init, 2000, 0, NULL) == 0 && init(0) == 0 && init(3) == 1 ? 0 : 1);
    }
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "a forked child calls the driver");
    printf("child %d\n", (int)child);

    printf("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
