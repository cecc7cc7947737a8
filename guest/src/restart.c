/* Waiting for a cuda-server that is starting or replacing its CUDA process (docs/protocol.md
 * §7, "A server that restarts"). After a fatal GPU fault of one guest process (CUDA's sticky
 * errors) the server refuses new processes (CUDA_ERROR_SYSTEM_NOT_READY) until every process
 * that held state exited, then execs itself: state INIT, then READY with the next epoch. A
 * program started meanwhile waits here, bounded, instead of failing; the header is read
 * afresh on every look, never trusted beyond the one value looked at. */
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "restart.h"

#define LOOK_NS 10000000L
#define DEFAULT_WAIT_S 30
#define MAX_WAIT_S 3600

/* IVCUDA_SERVER_WAIT_S (docs/operations.md): how long a process waits for a server that is
 * starting or restarting; 0 does not wait. */
static uint64_t wait_ns(void)
{
    const char *text = getenv("IVCUDA_SERVER_WAIT_S");
    unsigned long seconds = DEFAULT_WAIT_S;
    if (text != NULL && text[0] != '\0') {
        char *end;
        unsigned long parsed = strtoul(text, &end, 10);
        if (*end == '\0' && parsed <= MAX_WAIT_S)
            seconds = parsed;
        else
            ivc_log("IVCUDA_SERVER_WAIT_S=%s: not a number of seconds up to %d; waiting %d s", text, MAX_WAIT_S,
                    DEFAULT_WAIT_S);
    }
    return (uint64_t)seconds * 1000000000ull;
}

static void pause_a_little(void)
{
    struct timespec t = {0, LOOK_NS};
    nanosleep(&t, NULL);
}

int ivc_server_wait_ready(const uint8_t *base, size_t mapped)
{
    if (mapped < IVC_HEADER_SIZE)
        return 1; /* the region check says what is wrong */
    uint64_t deadline = 0;
    while (ivc_read64(base + IVC_HDR_MAGIC) == IVC_MAGIC
           && ivc_load32(base + IVC_HDR_SERVER_STATE) == IVC_STATE_INIT) {
        uint64_t now = ivc_now_ns();
        if (deadline == 0) {
            deadline = now + wait_ns();
            ivc_trace("the server is starting (server_state INIT): waiting for READY");
        }
        if (now >= deadline)
            return 0;
        pause_a_little();
    }
    return 1;
}

int ivc_server_wait_new_epoch(const uint8_t *base, uint32_t epoch)
{
    uint64_t deadline = ivc_now_ns() + wait_ns();
    for (;;) {
        uint32_t state = ivc_load32(base + IVC_HDR_SERVER_STATE);
        if (state == IVC_STATE_READY && ivc_load32(base + IVC_HDR_EPOCH) != epoch)
            return 1;
        if (state != IVC_STATE_READY && state != IVC_STATE_INIT)
            return 0; /* stopping: no new epoch is coming */
        if (ivc_now_ns() >= deadline)
            return 0;
        pause_a_little();
    }
}
