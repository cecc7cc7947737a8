/* A stand-in for the host's libcuda.so.1 for the oracle's tests (no GPU): cuInit, and the two
 * export tables whose addresses the integrity check covers, answering with mock_check.h from
 * where they are in this process. The other slots are never called. */
#include <stdint.h>
#include <string.h>

#include "mock_check.h"

#define EXPORT __attribute__((visibility("default")))

static int integrity(unsigned version, uint64_t seconds, uint8_t *out);
static void unused(void) {}

typedef void (*fn)(void);
/* size words as driver 580 has them: 104 bytes (12 slots) and 24 bytes (2 slots) */
static fn cudart_table[13] = { (fn)104, unused, unused, unused, unused, unused, unused, unused, unused, unused, unused,
                               unused, unused };
static fn integrity_table[3] = { (fn)24, (fn)integrity, unused };

static int integrity(unsigned version, uint64_t seconds, uint8_t *out)
{
    mock_check(version, seconds, (const uint64_t *)cudart_table, (const uint64_t *)integrity_table, out);
    return 0;
}

EXPORT int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }

EXPORT int cuGetExportTable(const void **table, const uint8_t *uuid)
{
    static const uint8_t cudart[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                        0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
    static const uint8_t check[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                       0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };
    if (!table || !uuid) return 1;
    *table = memcmp(uuid, cudart, 16) == 0 ? (const void *)cudart_table
             : memcmp(uuid, check, 16) == 0 ? (const void *)integrity_table
                                            : NULL;
    return *table ? 0 : 500;
}
