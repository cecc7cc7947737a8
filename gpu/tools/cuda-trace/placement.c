/* Putting words and code where the experiments of modes.c need them: into the driver's own
 * tables (their pages are read-only after relocation: made writable for the write, then
 * given their protection back), into trampolines in anonymous memory, and into pages mapped
 * at fixed addresses (another process's addresses, for the mirror modes) without ever
 * replacing a mapping that is already there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096ul

/* The protection of the mapping holding addr, from /proc/self/maps; -1 if none. */
static int prot_at(uint64_t addr)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return -1;
    char line[512];
    int prot = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3) continue;
        if (addr < lo || addr >= hi) continue;
        prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
               (perms[2] == 'x' ? PROT_EXEC : 0);
        break;
    }
    fclose(f);
    return prot;
}

/* Writes n bytes at dst, a page that may be read-only; its protection is kept. */
int trace_poke(void *dst, const void *src, size_t n)
{
    uint64_t first = (uint64_t)(uintptr_t)dst & ~(PAGE - 1);
    uint64_t last = ((uint64_t)(uintptr_t)dst + n - 1) & ~(PAGE - 1);
    int prots[8];
    if (n == 0) return 0;
    if ((last - first) / PAGE >= sizeof prots / sizeof prots[0]) return -1;
    for (uint64_t p = first; p <= last; p += PAGE) {
        int prot = prot_at(p);
        if (prot < 0) return -1;
        prots[(p - first) / PAGE] = prot;
        if (!(prot & PROT_WRITE) && mprotect((void *)(uintptr_t)p, PAGE, prot | PROT_READ | PROT_WRITE) != 0) return -1;
    }
    memcpy(dst, src, n);
    for (uint64_t p = first; p <= last; p += PAGE) {
        int prot = prots[(p - first) / PAGE];
        if (!(prot & PROT_WRITE)) mprotect((void *)(uintptr_t)p, PAGE, prot);
    }
    return 0;
}

/* movabs $target, %r11; jmp *%r11 — 13 bytes, so trampolines 16 bytes apart fit (the
 * driver's functions are 16-byte aligned, some exactly 16 bytes apart). r11 is scratch in
 * every call; the shim's stubs load their own id into it anyway. */
void trace_write_trampoline(uint8_t *at, uint64_t target)
{
    at[0] = 0x49;
    at[1] = 0xbb;
    memcpy(at + 2, &target, 8);
    at[10] = 0x41;
    at[11] = 0xff;
    at[12] = 0xe3;
}

/* n trampolines in a fresh anonymous page, out[i] jumping to targets[i]; the page is
 * written before it becomes executable and never written again. */
int trace_anon_trampolines(const uint64_t *targets, unsigned n, uint64_t *out)
{
    size_t bytes = ((size_t)n * 16 + PAGE - 1) & ~(PAGE - 1);
    if (n == 0) return 0;
    uint8_t *page = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return -1;
    for (unsigned i = 0; i < n; i++) {
        trace_write_trampoline(page + 16 * i, targets[i]);
        out[i] = (uint64_t)(uintptr_t)(page + 16 * i);
    }
    if (mprotect(page, bytes, PROT_READ | PROT_EXEC) != 0) return -1;
    return 0;
}

/* Maps the pages covering [start, start+len) at exactly that address, zero-filled, unless
 * they are mapped already by this function (then only the protection is widened). Never
 * replaces a mapping of anyone else: that is a collision, reported in *busy. */
#define MAX_RESERVED 512
static struct {
    uint64_t page;
    int prot;
} reserved[MAX_RESERVED];
static unsigned reserved_count;

int trace_reserve_pages(uint64_t start, uint64_t len, int prot, uint64_t *busy)
{
    uint64_t first = start & ~(PAGE - 1), last = (start + len - 1) & ~(PAGE - 1);
    for (uint64_t p = first; p <= last; p += PAGE) {
        unsigned i;
        for (i = 0; i < reserved_count && reserved[i].page != p; i++) {
        }
        if (i < reserved_count) {
            if ((reserved[i].prot | prot) != reserved[i].prot) {
                reserved[i].prot |= prot;
                mprotect((void *)(uintptr_t)p, PAGE, reserved[i].prot);
            }
            continue;
        }
        if (reserved_count == MAX_RESERVED) {
            *busy = p;
            return -1;
        }
        void *got = mmap((void *)(uintptr_t)p, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (got == MAP_FAILED || (uint64_t)(uintptr_t)got != p) {
            if (got != MAP_FAILED) munmap(got, PAGE); /* a kernel without MAP_FIXED_NOREPLACE */
            *busy = p;
            return -1;
        }
        reserved[reserved_count].page = p;
        reserved[reserved_count].prot = prot;
        reserved_count++;
    }
    return 0;
}
