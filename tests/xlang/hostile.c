/*
 * A hostile guest: talks to a real cuda-server through the region with raw stores,
 * bypassing the guest library, and sends what a broken or malicious guest could.
 * Every malformed request must get an error code back (never a hang), and the server
 * must keep serving well-formed requests afterwards.
 *
 * Offsets, sizes and opcodes come from the generated ivc_region.h and ivc_api.h (api/),
 * as the library's and the server's do: the protocol is written down in one place.
 *
 * usage: hostile <region file>      prints "N passed, M failed", exit 0 iff M == 0
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ivc_api.h"
#include "ivc_region.h"

#define OK 0
#define INVALID_VALUE 1
#define NOT_INITIALIZED 3
#define INVALID_CONTEXT 201
#define INVALID_HANDLE 400
#define ILLEGAL_STATE 401
#define NOT_SUPPORTED 801

static uint8_t *region;
static size_t region_size;
static int passed, failed;

static uint64_t ld64(const void *p) { return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE); }
static uint32_t rd32(size_t off) { uint32_t v; memcpy(&v, region + off, 4); return v; }
static uint64_t rd64(size_t off) { uint64_t v; memcpy(&v, region + off, 8); return v; }

static void check(int cond, const char *what)
{
    if (cond) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL: %s\n", what);
    }
}

struct channel {
    uint8_t *base;
    uint64_t seq;
    uint32_t request_size;
    uint32_t ring_size;
};

static uint8_t *request_area(struct channel *c) { return c->base + IVC_CH_AREAS; }
static uint8_t *response_area(struct channel *c) { return c->base + IVC_CH_AREAS + c->request_size; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sends one raw request; returns the CUresult, or -1 when no answer came in 5 s. */
static int call_raw(struct channel *c, uint32_t opcode, const void *payload, uint32_t declared_len,
                    uint32_t copy_len, uint64_t seq)
{
    uint8_t *req = request_area(c);
    memcpy(req + IVC_MSG_OPCODE, &opcode, 4);
    memcpy(req + IVC_MSG_PAYLOAD_LEN, &declared_len, 4);
    memcpy(req + IVC_MSG_SEQ, &seq, 8);
    if (copy_len) {
        memcpy(req + IVC_MSG_HEADER, payload, copy_len);
    }
    __atomic_store_n((uint64_t *)(c->base + IVC_CH_REQ_SEQ), seq, __ATOMIC_RELEASE);
    double deadline = now() + 5.0;
    while (ld64(c->base + IVC_CH_RESP_SEQ) != seq) {
        if (now() > deadline) {
            return -1;
        }
        usleep(10);
    }
    int32_t result;
    memcpy(&result, response_area(c) + IVC_RESP_RESULT, 4);
    return result;
}

static int call(struct channel *c, uint32_t opcode, const void *payload, uint32_t len)
{
    c->seq++;
    return call_raw(c, opcode, payload, len, len, c->seq);
}

static void put64(uint8_t *p, size_t *off, uint64_t v) { memcpy(p + *off, &v, 8); *off += 8; }

static void put_str(uint8_t *p, size_t *off, const char *s, size_t len_with_nul)
{
    put64(p, off, len_with_nul);
    memcpy(p + *off, s, len_with_nul);
    *off += (len_with_nul + 7) & ~(size_t)7;
}

static int hello(struct channel *c, uint64_t api_hash)
{
    uint8_t p[256];
    size_t off = 0;
    put64(p, &off, IVC_PROTOCOL_VERSION); /* protocolVersion */
    put64(p, &off, api_hash);     /* apiHash */
    put64(p, &off, (uint64_t)getpid());
    put64(p, &off, (uint64_t)getpid());
    put_str(p, &off, "hostile-test", 13);
    put64(p, &off, 128);          /* messageCapacity */
    return call(c, IVC_OP_ivc_hello, p, (uint32_t)off);
}

static int claim(struct channel *c, uint64_t token)
{
    uint32_t count = rd32(IVC_HDR_CHANNEL_COUNT);
    uint32_t stride = rd32(IVC_HDR_CHANNEL_STRIDE);
    uint64_t table = rd64(IVC_HDR_CHANNEL_TABLE_OFFSET);
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *base = region + table + (uint64_t)i * stride;
        /* §3: only a channel at rest may be claimed (a poisoned one released by a broken
         * guest is not, and stays out of use) */
        if (ld64(base + IVC_CH_REQ_SEQ) != ld64(base + IVC_CH_RESP_SEQ) || ld64(base + IVC_CH_RING_TAIL) != ld64(base + IVC_CH_RING_HEAD) ||
            ld64(base + IVC_CH_GUEST_CHUNK) != ld64(base + IVC_CH_SERVER_CHUNK)) {
            continue;
        }
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n((uint64_t *)(base + IVC_CH_OWNER), &expected, token, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            uint32_t pid = (uint32_t)getpid();
            memcpy(base + IVC_CH_OWNER_PID, &pid, 4);
            memcpy(base + IVC_CH_OWNER_TID, &pid, 4);
            c->base = base;
            c->seq = ld64(base + IVC_CH_REQ_SEQ);
            c->request_size = rd32(IVC_HDR_REQUEST_AREA_SIZE);
            c->ring_size = rd32(IVC_HDR_RING_SIZE);
            return 0;
        }
    }
    return -1;
}

static void release(struct channel *c)
{
    __atomic_store_n((uint64_t *)(c->base + IVC_CH_OWNER), 0, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: hostile <region file>\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    region_size = (size_t)st.st_size;
    region = mmap(NULL, region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (region == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    if (rd64(IVC_HDR_MAGIC) != IVC_MAGIC || rd32(IVC_HDR_PROTOCOL_VERSION) != IVC_PROTOCOL_VERSION ||
        rd32(IVC_HDR_SERVER_STATE) != IVC_STATE_READY ||
        rd64(IVC_HDR_REGION_SIZE) != region_size) {
        fprintf(stderr, "hostile: region is not a ready protocol-%u region\n", IVC_PROTOCOL_VERSION);
        return 2;
    }
    uint64_t api_hash = rd64(IVC_HDR_API_HASH);
    uint64_t token = ((uint64_t)getpid() << 32) | 0x5a5a5a5aU;
    uint8_t p[8192];
    size_t off;

    /* 1. A channel whose first request is not a hello gets refused. */
    struct channel a;
    check(claim(&a, token) == 0, "claim a channel");
    int r = call(&a, IVC_OP_cuInit, "\0\0\0\0\0\0\0\0", 8);
    check(r != OK && r != -1, "a request before ivc_hello is refused");
    release(&a);
    usleep(200000);

    /* 2. A hello with the wrong api hash is refused with NOT_INITIALIZED. */
    struct channel b;
    check(claim(&b, token) == 0, "claim a second channel");
    check(hello(&b, api_hash ^ 1) == NOT_INITIALIZED, "hello with a wrong api hash → NOT_INITIALIZED");
    release(&b);
    usleep(200000);

    /* 3. A proper channel. */
    struct channel c;
    check(claim(&c, token) == 0, "claim the working channel");
    check(hello(&c, api_hash) == OK, "hello with the right hash");
    off = 0;
    put64(p, &off, 0);
    check(call(&c, IVC_OP_cuInit, p, (uint32_t)off) == OK, "cuInit after hello");

    /* Unknown opcode. */
    check(call(&c, 9999, p, 8) == NOT_SUPPORTED, "unknown opcode → NOT_SUPPORTED");
    /* Declared payload longer than the request area. */
    c.seq++;
    r = call_raw(&c, IVC_OP_cuInit, p, 0x7fffffff, 0, c.seq);
    check(r == INVALID_VALUE, "payload_len beyond the request area → INVALID_VALUE");
    /* Short payload: cuDeviceGetAttribute needs 16 bytes. */
    check(call(&c, IVC_OP_cuDeviceGetAttribute, p, 8) == INVALID_VALUE, "short payload → INVALID_VALUE");
    /* Trailing garbage after a complete payload. */
    memset(p, 0, 32);
    check(call(&c, IVC_OP_cuInit, p, 24) == INVALID_VALUE, "payload longer than the parameters → INVALID_VALUE");
    /* A context handle the server never minted. */
    off = 0;
    put64(p, &off, 0x0100000712345678ULL);
    r = call(&c, IVC_OP_cuCtxSetCurrent, p, (uint32_t)off);
    check(r == INVALID_CONTEXT || r == INVALID_HANDLE, "forged context handle → INVALID_CONTEXT/HANDLE");
    /* A stream handle the server never minted. */
    off = 0;
    put64(p, &off, 0x0400000200000009ULL);
    check(call(&c, IVC_OP_cuStreamSynchronize, p, (uint32_t)off) == INVALID_HANDLE, "forged stream → INVALID_HANDLE");
    /* A string whose declared length runs past the payload. */
    off = 0;
    put64(p, &off, 0);              /* hmod */
    put64(p, &off, 5000);           /* name length, more than sent */
    memset(p + off, 'A', 64);
    off += 64;
    check(call(&c, IVC_OP_cuModuleGetFunction, p, (uint32_t)off) == INVALID_VALUE, "string length past payload → INVALID_VALUE");
    /* A string without its NUL. */
    off = 0;
    put64(p, &off, 0);
    put64(p, &off, 8);
    memcpy(p + off, "ABCDEFGH", 8);
    off += 8;
    r = call(&c, IVC_OP_cuModuleGetFunction, p, (uint32_t)off);
    check(r == INVALID_VALUE, "string without NUL → INVALID_VALUE");
    /* Pool copy outside the pool. */
    off = 0;
    put64(p, &off, rd64(IVC_HDR_POOL_SIZE) - 8);   /* poolOffset */
    put64(p, &off, 0x1000);                  /* src device */
    put64(p, &off, 0);                       /* stream */
    put64(p, &off, 4096);                    /* size */
    check(call(&c, IVC_OP_ivc_memcpy_dtoh_pool, p, (uint32_t)off) == INVALID_VALUE, "pool copy past the pool → INVALID_VALUE");
    off = 0;
    put64(p, &off, UINT64_MAX - 8);
    put64(p, &off, 0x1000);
    put64(p, &off, 0);
    put64(p, &off, 16);
    check(call(&c, IVC_OP_ivc_memcpy_dtoh_pool, p, (uint32_t)off) == INVALID_VALUE, "pool offset overflow → INVALID_VALUE");
    /* Inline copy to device memory this guest never allocated. */
    off = 0;
    put64(p, &off, 0x7f0000000000ULL);       /* dst */
    put64(p, &off, 0);                       /* stream */
    put64(p, &off, 16);                      /* data length */
    memset(p + off, 0xab, 16);
    off += 16;
    put64(p, &off, 16);                      /* size */
    check(call(&c, IVC_OP_ivc_memcpy_htod_inline, p, (uint32_t)off) == INVALID_VALUE, "copy to unowned device memory → INVALID_VALUE");
    /* Freeing memory that was never allocated. */
    off = 0;
    put64(p, &off, 0x7f0000000000ULL);
    check(call(&c, IVC_OP_ivc_mem_free, p, (uint32_t)off) == INVALID_VALUE, "free of unowned memory → INVALID_VALUE");
    /* Garbage flood: random opcodes and payloads; every one must be answered. */
    srand(12345);
    int answered = 1;
    for (int i = 0; i < 2000 && answered; i++) {
        uint32_t len = (uint32_t)(rand() % 512);
        for (uint32_t k = 0; k < len; k++) {
            p[k] = (uint8_t)rand();
        }
        uint32_t op = (uint32_t)(rand() % 300);
        if (op == IVC_OP_ivc_hello || op == 201 /* goodbye */ || op == 202 /* process exit */) {
            continue;
        }
        answered = call(&c, op, p, len) != -1;
    }
    check(answered, "2000 random requests are all answered");
    off = 0;
    put64(p, &off, 0);
    check(call(&c, IVC_OP_cuInit, p, (uint32_t)off) == OK, "the channel still serves after the flood");

    /* A ring record with a bad length poisons only this channel. */
    uint8_t *ring = c.base + IVC_CH_AREAS + c.request_size + rd32(IVC_HDR_RESPONSE_AREA_SIZE);
    uint64_t tail = ld64(c.base + IVC_CH_RING_TAIL);
    uint32_t bad_len = 12, opcode = IVC_OP_cuMemsetD8Async;
    memcpy(ring + (tail % c.ring_size) + IVC_REC_TOTAL_LEN, &bad_len, 4);
    memcpy(ring + (tail % c.ring_size) + IVC_REC_OPCODE, &opcode, 4);
    __atomic_store_n((uint64_t *)(c.base + IVC_CH_RING_TAIL), tail + IVC_RECORD_HEADER, __ATOMIC_RELEASE);
    check(call(&c, IVC_OP_cuInit, p, 8) == ILLEGAL_STATE, "a bad ring record poisons the channel → ILLEGAL_STATE");
    release(&c);

    /* 4. The server still serves a fresh channel. */
    usleep(200000);
    struct channel d;
    check(claim(&d, token + 1) == 0, "claim after the abuse");
    check(hello(&d, api_hash) == OK, "hello after the abuse");
    off = 0;
    put64(p, &off, 0);
    check(call(&d, IVC_OP_cuInit, p, (uint32_t)off) == OK, "cuInit after the abuse");
    release(&d);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
