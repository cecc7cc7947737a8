/* The integrity oracle's wire (ivcuda-integrity-oracle, oracle.c): fixed-size little-endian
 * records over the oracle's stdin (requests) and stdout (the ready record, then one reply per
 * request), written by the cuda-server (io.ivcuda.server.integrity.OracleProcess mirrors these
 * layouts; docs/export-tables.md, "d4082055"). Fixed sizes: nothing is parsed, a short read is
 * the end. */
#ifndef ORACLE_PROTO_H
#define ORACLE_PROTO_H

#include <stdint.h>

#define ORACLE_MAGIC 0x4f435649u /* "IVCO" */

/* status of the ready record and of a reply */
enum oracle_status {
    ORACLE_OK = 0,
    ORACLE_NO_NAMESPACE = 1, /* no user/PID namespace could be made (message says why) */
    ORACLE_NO_PID = 2,       /* the namespace could not give the guest's pid */
    ORACLE_NO_DRIVER = 3,    /* the driver did not load or cuInit failed (driver_rc) */
    ORACLE_NO_TABLES = 4,    /* the driver has no usable 6bd5fb6c/d4082055 */
    ORACLE_BAD_REQUEST = 5,  /* a request with a wrong magic or a value out of range */
    ORACLE_NO_THREAD = 6,    /* no thread can have that pthread_self() here (message on stderr) */
    ORACLE_DRIVER_FAILED = 7 /* the driver's slot 1 answered driver_rc != 0 */
};

/* First record on stdout, once: where the driver's tables are in the oracle. */
struct oracle_ready {
    uint32_t magic;
    int32_t status;
    int32_t driver_rc;         /* cuInit's result when status is ORACLE_NO_DRIVER */
    uint32_t pid;              /* getpid() in the oracle: the guest's pid */
    uint64_t cudart_table;     /* 6bd5fb6c, the CUDART interface */
    uint64_t cudart_bytes;     /* its size word */
    uint64_t integrity_table;  /* d4082055 */
    uint64_t integrity_bytes;  /* its size word */
    uint64_t integrity_slot1;  /* d4082055's slot-1 function */
    char message[80];          /* why not, NUL-terminated ("" when status is ORACLE_OK) */
};

/* One question: d4082055 slot 1 (version, seconds) asked from pthread_self() == thread. */
struct oracle_request {
    uint32_t magic;
    uint32_t version;
    uint64_t seconds;
    uint64_t thread;
};

struct oracle_reply {
    uint32_t magic;
    int32_t status;
    int32_t driver_rc;
    uint32_t reserved;
    uint8_t answer[16];
};

_Static_assert(sizeof(struct oracle_ready) == 136, "oracle_ready: the server reads 136 bytes");
_Static_assert(sizeof(struct oracle_request) == 24, "oracle_request: the server writes 24 bytes");
_Static_assert(sizeof(struct oracle_reply) == 32, "oracle_reply: the server reads 32 bytes");

#endif
