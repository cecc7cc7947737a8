/* The library's one clock: CLOCK_MONOTONIC in nanoseconds (waits, liveness, the interrupt
 * daemon's reconnect pacing, a token's fallback nonce). */
#ifndef IVC_CLOCK_H
#define IVC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ivc_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

#endif
