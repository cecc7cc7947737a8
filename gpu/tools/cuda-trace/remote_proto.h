/* What cuda-trace (remote.c) and gpu/tools/integrity-probe's helper say to each other over a
 * UNIX SOCK_SEQPACKET socket: the helper is a second process with NVIDIA's driver loaded,
 * standing in for ivcuda's cuda-server; the shim asks it the export-table slots that ivcuda
 * forwards to the host (the integrity check) instead of its own process's driver. An oracle
 * helper (helper --oracles) starts, per connection, an oracle: a process of its own holding
 * the driver, made as like the asking process as the REMOTE_OPEN flags say. One request, one
 * reply, both fixed-size. */
#ifndef REMOTE_PROTO_H
#define REMOTE_PROTO_H

#include <stdint.h>

#define REMOTE_MAGIC 0x69767072u /* "ivpr" */

enum remote_op {
    REMOTE_PING = 1,
    REMOTE_INTEGRITY = 2, /* d4082055 slot 1 (version, seconds, 16-byte answer) */
    REMOTE_SLOT3 = 3,     /* 263e8860 slot 3 (buffer of len bytes, len) on a copy of the buffer */
    REMOTE_OPEN = 4,      /* first request to an oracle helper (helper --oracles): start an oracle
                             for the asking process (pid, flags); the reply comes from the oracle
                             once its driver is ready and its tables are described in
                             <socket>.<pid>.tables; later requests on the connection go to it */
};

/* REMOTE_OPEN flags: what the oracle makes equal to the asking process and thread */
#define ORACLE_PID 1u    /* its pid: the oracle is that process of a PID namespace of its own */
#define ORACLE_SELF 2u   /* each integrity call runs in an oracle thread whose pthread_self()
                            is the asking thread's */
#define ORACLE_GUARDS 4u /* ... with the asking thread's stack and pointer guards (%fs:0x28,
                            %fs:0x30) and the asking process's AT_RANDOM bytes */

struct remote_request {
    uint32_t magic;
    uint32_t op;
    uint32_t version;
    uint32_t len; /* REMOTE_SLOT3: bytes of data used */
    uint64_t seconds;
    uint8_t data[64];
    /* who asks (REMOTE_OPEN, REMOTE_INTEGRITY) */
    uint32_t pid;
    uint32_t tid;
    uint64_t self; /* pthread_self() */
    uint64_t stack_guard;
    uint64_t pointer_guard;
    uint8_t at_random[16];
    uint32_t flags; /* REMOTE_OPEN: ORACLE_* */
    uint32_t reserved;
};

struct remote_reply {
    uint32_t magic;
    int32_t rc;         /* the driver's CUresult; 999 when the helper could not ask it */
    uint32_t overrun;   /* REMOTE_INTEGRITY: bytes past the 16th the driver changed */
    uint32_t helper_pid;
    uint8_t answer[16];
};

#endif
