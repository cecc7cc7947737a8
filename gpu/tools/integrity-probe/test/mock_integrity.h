/* A MOCK of the integrity check, for testing the experiment's plumbing without a GPU: what
 * mock_driver.c answers and mock_app.c (playing cudart) expects. It is a hypothesis made
 * up for the test — the answer to versions ending in 2 covers the time and the ADDRESSES of
 * four tables, the others only the version; with MOCK_INTEGRITY_PROCESS set also the
 * process id and the calling thread's pthread_self(), as the first GPU runs suggest for
 * NVIDIA's — so that each experiment mode has a known outcome here; it says nothing about
 * NVIDIA's check, which gpu/integrity-probe.sh measures. */
#ifndef MOCK_INTEGRITY_H
#define MOCK_INTEGRITY_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline uint64_t mock_fnv(uint64_t h, uint64_t word)
{
    for (int i = 0; i < 8; i++) h = (h ^ ((word >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h;
}

/* addresses: the CUDART interface, context-local storage, context checks and integrity
 * tables, as the one computing sees them */
static inline void mock_answer(unsigned version, uint64_t seconds, const uint64_t addresses[4], uint8_t out[16])
{
    uint64_t h = mock_fnv(0xcbf29ce484222325ull, version);
    if (version % 10 == 2) {
        h = mock_fnv(h, seconds);
        for (int i = 0; i < 4; i++) h = mock_fnv(h, addresses[i]);
        if (getenv("MOCK_INTEGRITY_PROCESS")) {
            h = mock_fnv(h, (uint64_t)getpid());
            h = mock_fnv(h, (uint64_t)(uintptr_t)pthread_self());
        }
    }
    uint64_t g = mock_fnv(h, 0x5a5a);
    memcpy(out, &h, 8);
    memcpy(out + 8, &g, 8);
}

#endif
