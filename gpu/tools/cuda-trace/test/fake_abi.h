/* What the fake driver (fake_driver.c) and the test program (trace_test.c) agree on: the
 * export tables it serves and the functions in them. Nothing here is NVIDIA's. */
#ifndef FAKE_ABI_H
#define FAKE_ABI_H

#include <stdint.h>

#define FAKE_DRIVER_VERSION 13000
#define FAKE_NOT_FOUND 500

/* A table with a size word: [0] size 56, [1] scale, [2] NULL, [3] data pointer,
 * [4] wide (8 integer arguments, two on the stack; returns 16 bytes in rax:rdx; writes a + b
 * where the 7th points, if it is an address),
 * [5] mix (doubles in xmm registers), [6] variadic sum of doubles. */
static const uint8_t FAKE_SIZED_UUID[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                                             0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01 };
/* A table without a size word (like context-local storage): [0] put, [1] get, [2] call_back
 * (calls a function the caller passes, which may call into the driver again), [3] state the
 * driver keeps in the table (put writes the key there). */
static const uint8_t FAKE_NOSIZE_UUID[16] = { 0xc6, 0x93, 0x33, 0x6e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
static const uint8_t FAKE_UNKNOWN_UUID[16] = { 0xde, 0xad };

struct fake_pair {
    uint64_t lo, hi;
};

struct fake_sized_table {
    uint64_t size;
    int (*scale)(int version, uint8_t *out16); /* writes 16 bytes derived from version */
    void *unused;
    const char *data;
    struct fake_pair (*wide)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
    double (*mix)(int, double, double, int, double);
    double (*vsum)(int n, ...);
};

struct fake_nosize_table {
    int (*put)(uint64_t key, void *value);
    int (*get)(uint64_t key, void **value);
    int (*call_back)(int (*fn)(void *), void *arg);
    uint64_t state;
};

/* What the fake cuLaunchKernel answers: a mix of all eleven arguments. */
static inline int fake_launch_result(uint64_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shmem, uint64_t stream, void **params, void **extra)
{
    uint64_t h = f;
    const uint64_t parts[] = { gx, gy, gz, bx, by, bz, shmem, stream, (uint64_t)(uintptr_t)params,
                               (uint64_t)(uintptr_t)extra };
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++) h = h * 1000003u + parts[i];
    return (int)(h & 0x3fffffff);
}

#endif
