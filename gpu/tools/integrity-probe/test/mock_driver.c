/* A stand-in for NVIDIA's libcuda.so.1 (same SONAME) with cudart's seven export tables, for
 * testing gpu/integrity-probe.sh's machinery without a GPU: its integrity check is the MOCK
 * of mock_integrity.h, computed from where this process's tables are. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "../known_tables.h"
#include "mock_integrity.h"

#define EXPORT __attribute__((visibility("default")))
#define NOT_FOUND 500

EXPORT int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }

EXPORT int cuDriverGetVersion(int *v)
{
    if (!v) return 1;
    *v = 13000;
    return 0;
}

static int nothing(void) { return 0; }
static int nothing2(void) { return 0; }

static uint64_t hook_buffer[2][64];
static void hook2(void **p, size_t *n) { *p = hook_buffer[0], *n = 0x400; }
static void hook6(void **p, size_t *n) { *p = hook_buffer[1], *n = 0xe; }

static uint8_t last_slot3[64];
static int slot3(const void *buf, size_t n)
{
    memcpy(last_slot3, buf, n < 64 ? n : 64);
    return 0;
}

static int local_put(void) { return 0; }
static int local_remove(void) { return 0; }
static int local_get(void) { return NOT_FOUND; }

static int integrity(unsigned version, uint64_t seconds, uint8_t *out);

typedef void (*fn)(void);
#define F(f) ((fn)(f))
static fn first_table[3] = { (fn)24, F(nothing), F(nothing2) };
static fn cudart_table[13] = { (fn)104, F(nothing), F(nothing), F(nothing), F(nothing), F(nothing), F(nothing),
                               F(nothing), F(nothing), F(nothing), F(nothing), F(nothing), F(nothing) };
static fn hooks_table[7] = { (fn)56, F(nothing), F(hook2), F(nothing), F(nothing), F(nothing), F(hook6) };
static fn tools_table[3] = { (fn)24, F(nothing), F(nothing2) };
static fn local_table[16] = { F(local_put), F(local_remove), F(local_get), 0, (fn)0x18, F(nothing) };
static fn checks_table[15] = { (fn)120, F(nothing), F(nothing), F(slot3), F(nothing), F(nothing), F(nothing), F(nothing),
                               F(nothing), F(nothing), F(nothing), F(nothing), F(nothing), F(nothing), F(nothing) };
static fn integrity_table[3] = { (fn)24, F(integrity), F(nothing) };

static int integrity(unsigned version, uint64_t seconds, uint8_t *out)
{
    const uint64_t addresses[4] = { (uint64_t)(uintptr_t)cudart_table, (uint64_t)(uintptr_t)local_table,
                                    (uint64_t)(uintptr_t)checks_table, (uint64_t)(uintptr_t)integrity_table };
    mock_answer(version, seconds, addresses, out);
    return 0;
}

EXPORT int cuGetExportTable(const void **table, const uint8_t *uuid)
{
    static const fn *const by_index[KT_CUDART_SET] = { first_table, cudart_table, hooks_table, tools_table,
                                                       local_table, checks_table, integrity_table };
    if (!table || !uuid) return 1;
    for (int t = 0; t < KT_CUDART_SET; t++) {
        if (memcmp(uuid, known_tables[t].uuid, 16) == 0) {
            *table = by_index[t];
            return 0;
        }
    }
    *table = NULL;
    return NOT_FOUND;
}
