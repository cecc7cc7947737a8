/* What cuda-trace (remote.c) and gpu/tools/integrity-probe's helper say to each other over a
 * UNIX SOCK_SEQPACKET socket: the helper is a second process with NVIDIA's driver loaded,
 * standing in for ivcuda's cuda-server; the shim asks it the export-table slots that ivcuda
 * forwards to the host (the integrity check) instead of its own process's driver. One
 * request, one reply, both fixed-size. */
#ifndef REMOTE_PROTO_H
#define REMOTE_PROTO_H

#include <stdint.h>

#define REMOTE_MAGIC 0x69767072u /* "ivpr" */

enum remote_op {
    REMOTE_PING = 1,
    REMOTE_INTEGRITY = 2, /* d4082055 slot 1 (version, seconds, 16-byte answer) */
    REMOTE_SLOT3 = 3,     /* 263e8860 slot 3 (buffer of len bytes, len) on a copy of the buffer */
};

struct remote_request {
    uint32_t magic;
    uint32_t op;
    uint32_t version;
    uint32_t len; /* REMOTE_SLOT3: bytes of data used */
    uint64_t seconds;
    uint8_t data[64];
};

struct remote_reply {
    uint32_t magic;
    int32_t rc;         /* the driver's CUresult; 999 when the helper could not ask it */
    uint32_t overrun;   /* REMOTE_INTEGRITY: bytes past the 16th the driver changed */
    uint32_t helper_pid;
    uint8_t answer[16];
};

#endif
