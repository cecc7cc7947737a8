/* A MOCK of cudart's integrity check for testing ivcuda's oracle path without a GPU. Made up
 * for the tests, it covers what the H200 measurements found NVIDIA's answer to versions like
 * 13002 to cover (docs/export-tables.md): the asking process's pid, the asking thread's
 * pthread_self(), the addresses of tables 6bd5fb6c and d4082055 and d4082055's slot-1 word;
 * versions 13000/13001 only the version. mock_libcuda.c answers with it from where its tables
 * are; a test playing cudart computes it from the tables it was handed. */
#ifndef MOCK_CHECK_H
#define MOCK_CHECK_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static inline uint64_t mock_mix(uint64_t h, uint64_t word)
{
    for (int i = 0; i < 8; i++) h = (h ^ ((word >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h;
}

/* cudart, integrity: the tables' addresses; slot1: d4082055's word 1 */
static inline void mock_check_at(unsigned version, uint64_t seconds, uint64_t cudart, uint64_t integrity,
                                 uint64_t slot1, uint8_t out[16])
{
    uint64_t h = mock_mix(0xcbf29ce484222325ull, version);
    if (version % 10 == 2) {
        h = mock_mix(h, seconds);
        h = mock_mix(h, cudart);
        h = mock_mix(h, integrity);
        h = mock_mix(h, slot1);
        h = mock_mix(h, (uint64_t)getpid());
        h = mock_mix(h, (uint64_t)(uintptr_t)pthread_self());
    }
    uint64_t g = mock_mix(h, 0x5a5a);
    memcpy(out, &h, 8);
    memcpy(out + 8, &g, 8);
}

/* from the tables as handed out: their addresses, and word 1 read in d4082055 */
static inline void mock_check(unsigned version, uint64_t seconds, const uint64_t *cudart, const uint64_t *integrity,
                              uint8_t out[16])
{
    mock_check_at(version, seconds, (uint64_t)(uintptr_t)cudart, (uint64_t)(uintptr_t)integrity, integrity[1], out);
}

#endif
