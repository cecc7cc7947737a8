/* Tables 6bd5fb6c and d4082055 where the process's integrity oracle has them.
 *
 * cudart's integrity check (d4082055 slot 1, integrity_check.c) is answered for versions like
 * 13002 from the asking process's pid and thread and the ADDRESSES of these two tables and of
 * d4082055's slot-1 function (docs/export-tables.md, "d4082055"). The server's oracle for this
 * process runs the host's driver as this pid and reports where its driver has them
 * (ivc_integrity_oracle); cudart computes its expectation from the addresses it is handed. So
 * the first time cudart asks for either table, our copies are mapped at exactly the oracle's
 * addresses, and the copy of d4082055 names the oracle's slot-1 address, where an absolute jump
 * enters our ivc_integrity_check. Nothing is ever mapped over anything (MAP_FIXED_NOREPLACE):
 * an address taken here, or a placement that does not add up, leaves today's tables (logged
 * once). Every other table stays where export_tables.c keeps it.
 *
 * A forked child keeps the mappings; its own oracle (started by the server for its own pid)
 * reports the same addresses, because every oracle runs its driver without randomisation:
 * integrity_check.c compares them once per pid (ivc_integrity_placement_matches). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "log.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096ull
/* x86-64 user space, above the first pages: what an address from the server must be in */
#define USER_BOTTOM 0x10000ull
#define USER_TOP 0x00007ffffffff000ull
#define MAX_TABLE_BYTES 4096ull
/* movabs $target, %rax; jmp *%rax — %rax is neither an argument nor preserved across a call */
#define JUMP_BYTES 12
/* the three ranges span at most two pages each */
#define MAX_PAGES 6

static const unsigned char CUDART_UUID[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                               0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
static const unsigned char INTEGRITY_UUID[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                                  0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int tried;                     /* the placement was attempted (once per address space) */
static const uint64_t *placed_cudart; /* NULL: not placed */
static const uint64_t *placed_integrity;
static uint64_t placed_slot1;

struct range {
    uint64_t lo, hi;
};

static int in_user_space(uint64_t address, uint64_t bytes)
{
    return address >= USER_BOTTOM && address < USER_TOP && bytes <= USER_TOP - address;
}

static int overlap(struct range a, struct range b) { return a.lo < b.hi && b.lo < a.hi; }

/* Maps the pages the ranges cover (each once); 0, or -1 with nothing left mapped. */
static int map_pages(const struct range *r, int n, uint64_t *pages, int *count)
{
    *count = 0;
    for (int i = 0; i < n; i++) {
        for (uint64_t p = r[i].lo & ~(PAGE - 1); p < r[i].hi; p += PAGE) {
            int seen = 0;
            for (int k = 0; k < *count; k++)
                seen |= pages[k] == p;
            if (seen)
                continue;
            void *m = mmap((void *)(uintptr_t)p, PAGE, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (m == MAP_FAILED || (uint64_t)(uintptr_t)m != p) {
                int saved = errno;
                if (m != MAP_FAILED)
                    munmap(m, PAGE); /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
                for (int k = 0; k < *count; k++)
                    munmap((void *)(uintptr_t)pages[k], PAGE);
                ivc_log("cudart's integrity check: page %llx, where the integrity oracle has its driver's tables, is "
                        "taken in this process (%s): the tables stay where they are and the check will likely fail",
                        (unsigned long long)p, strerror(saved));
                *count = 0;
                return -1;
            }
            pages[(*count)++] = p;
        }
    }
    return 0;
}

static void place(const uint64_t *cudart, const uint64_t *integrity)
{
    uint64_t cudart_at, cudart_bytes, integrity_at, integrity_bytes, slot1;
    CUresult r = ivc_integrity_oracle(&cudart_at, &cudart_bytes, &integrity_at, &integrity_bytes, &slot1);
    if (r != CUDA_SUCCESS) { /* the server logged why; integrity_check.c says what follows */
        ivc_trace("no integrity oracle for this process (CUresult %d): the tables stay where they are", (int)r);
        return;
    }
    /* what goes there is ours (our size words); the server's sizes only have to be plausible */
    struct range ranges[3] = { { cudart_at, cudart_at + cudart[0] },
                               { integrity_at, integrity_at + integrity[0] },
                               { slot1, slot1 + JUMP_BYTES } };
    if (!in_user_space(cudart_at, MAX_TABLE_BYTES) || !in_user_space(integrity_at, MAX_TABLE_BYTES) ||
        !in_user_space(slot1, JUMP_BYTES) || cudart_at % 8 || integrity_at % 8 || cudart_bytes > MAX_TABLE_BYTES ||
        integrity_bytes > MAX_TABLE_BYTES || overlap(ranges[0], ranges[1]) || overlap(ranges[0], ranges[2]) ||
        overlap(ranges[1], ranges[2])) {
        ivc_log("cudart's integrity check: the server's placement (%llx, %llx, %llx) is not one this library "
                "can use: the tables stay where they are",
                (unsigned long long)cudart_at, (unsigned long long)integrity_at, (unsigned long long)slot1);
        return;
    }
    uint64_t pages[MAX_PAGES];
    int count;
    if (map_pages(ranges, 3, pages, &count) != 0)
        return;
    memcpy((void *)(uintptr_t)cudart_at, cudart, cudart[0]);
    uint64_t *copy = (uint64_t *)(uintptr_t)integrity_at;
    memcpy(copy, integrity, integrity[0]);
    copy[1] = slot1; /* the oracle's slot-1 address: cudart's check covers it */
    unsigned char *jump = (unsigned char *)(uintptr_t)slot1;
    uint64_t target = integrity[1]; /* the table's own slot 1 (integrity_check.c), read before it is replaced */
    jump[0] = 0x48, jump[1] = 0xb8; /* movabs $target, %rax */
    memcpy(jump + 2, &target, 8);
    jump[10] = 0xff, jump[11] = 0xe0; /* jmp *%rax */
    /* written once: from now on readable and (for the jump) executable, never writable */
    for (int k = 0; k < count; k++)
        mprotect((void *)(uintptr_t)pages[k], PAGE, PROT_READ | PROT_EXEC);
    placed_cudart = (const uint64_t *)(uintptr_t)cudart_at;
    placed_integrity = copy;
    placed_slot1 = slot1;
    ivc_trace("integrity tables placed at the oracle's addresses: 6bd5fb6c %llx, d4082055 %llx, slot 1 %llx",
              (unsigned long long)cudart_at, (unsigned long long)integrity_at, (unsigned long long)slot1);
}

const void *ivc_integrity_placed(const unsigned char uuid[16], const void *table, ivc_export_table_lookup lookup)
{
    int cudart = memcmp(uuid, CUDART_UUID, 16) == 0, integrity = memcmp(uuid, INTEGRITY_UUID, 16) == 0;
    if (!cudart && !integrity)
        return table;
    pthread_mutex_lock(&lock);
    if (!tried) {
        tried = 1;
        CUresult a;
        const char *name;
        place(lookup(CUDART_UUID, &a, &name), lookup(INTEGRITY_UUID, &a, &name));
    }
    const void *placed = cudart ? (const void *)placed_cudart : (const void *)placed_integrity;
    pthread_mutex_unlock(&lock);
    return placed ? placed : table;
}

int ivc_integrity_is_placed(void)
{
    pthread_mutex_lock(&lock);
    int placed = placed_cudart != NULL;
    pthread_mutex_unlock(&lock);
    return placed;
}

int ivc_integrity_placement_matches(void)
{
    uint64_t cudart_at, cudart_bytes, integrity_at, integrity_bytes, slot1;
    if (ivc_integrity_oracle(&cudart_at, &cudart_bytes, &integrity_at, &integrity_bytes, &slot1) != CUDA_SUCCESS)
        return 0;
    pthread_mutex_lock(&lock);
    int same = cudart_at == (uint64_t)(uintptr_t)placed_cudart &&
               integrity_at == (uint64_t)(uintptr_t)placed_integrity && slot1 == placed_slot1;
    pthread_mutex_unlock(&lock);
    return same;
}
