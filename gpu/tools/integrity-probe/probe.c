/* integrity-probe: calls NVIDIA's integrity check (export table d4082055, slot 1) directly,
 * with chosen inputs, after chosen steps, to see what its answer depends on: the version and
 * the time it is given, the process (its addresses, with or without address-space
 * randomisation), the calling site, the output buffer, the thread, which tables were asked
 * for, the calls cudart makes before it (hooks slots 2 and 6, context checks slot 3).
 *
 *   integrity-probe [--real PATH] [--ts SECONDS] [--ts-list S,S..] [--versions V,V..]
 *                   [--no-aslr] [--pid N] STEP...
 * --pid N: run as process N of a PID namespace of its own (pidns.h; root).
 * Steps, done in order:
 *   premmap:MB   map MB of anonymous memory before the driver is loaded (moves where it goes)
 *   block:ADDR:KB  keep [ADDR, ADDR+KB) mapped (inaccessible), so that a driver that would be
 *                loaded there (seen in an earlier run without randomisation) goes elsewhere
 *   sbrk:KB      grow the heap by KB
 *   load         dlopen the driver (done by the first step that needs it)
 *   init         cuInit(0)
 *   tables       ask for cudart's seven tables (the integrity table is always asked)
 *   hooks        a094798c slots 2 and 6 as cudart calls them (pointer, size outputs)
 *   slot3        263e8860 slot 3 with a 64-byte buffer as cudart passes it (the context-local
 *                storage and context checks tables, four zero words, two heap pointers)
 *   slot3copy    the same with copies of those two tables instead (what a shim's copies give)
 *   slot3zero    the same with 64 zero bytes
 *   ask          slot 1 for every version and time: out buffer on the stack, call site A
 *   ask2         the same from call site B (another function, a deeper stack)
 *   askheap      output buffer on the heap
 *   askstatic    output buffer in static memory
 *   askthread    from a new thread
 *   askseq       from two new threads, one after the other (glibc gives the second the first's
 *                stack and descriptor back: same pthread_self(), another thread id)
 *   askat:ADDR   from a new thread whose pthread_self() is ADDR (hex; thread_at.h)
 *   askat2:ADDR  the same with a stack twice as large (same pthread_self(), another stack block)
 *   askctx       from this thread, on another stack (swapcontext)
 *   askcanary    with this thread's stack guard (%fs:0x28) changed for the calls
 *   askguard     with this thread's pointer guard (%fs:0x30) changed for the calls
 *   askrandom    with the 16 AT_RANDOM bytes of the process changed for the calls
 *   askfork      from a child made by fork() (another pid, the same memory)
 * Output: lines `probe`, `loaded`, `table`, `hooks`, `slot3`, `thread` (who asks, before each
 * step's answers: pid, thread id, pthread_self()), and one `answer` per call:
 *   answer step=<n>:<name> v=<version> ts=<seconds> rc=<CUresult> out=<16 bytes hex> overrun=<bytes>
 * (overrun: bytes past the 16th the driver changed in a 64-byte buffer).
 * Built without stack protection (Makefile): askcanary changes the guard while this file's
 * frames are live, and only frames that are entered and left under one guard may check it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "known_tables.h"
#include "pidns.h"
#include "thread_at.h"
#include "thread_words.h"

extern char **environ;

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define MAX_LIST 32
#define GUARD 0xa5

typedef int (*init_fn)(unsigned);
typedef int (*get_table_fn)(const void **, const uint8_t *);
typedef int (*integrity_fn)(unsigned, uint64_t, uint8_t *);
typedef int (*six_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
typedef void (*hook_fn)(void **, size_t *);

static const char *real_path = "libcuda.so.1";
static void *driver;
static get_table_fn get_table;
static const uint64_t *tables[KNOWN_TABLE_COUNT];
static unsigned versions[MAX_LIST] = { 13000, 13001, 13002 };
static unsigned version_count = 3;
static uint64_t times[MAX_LIST];
static unsigned time_count;
static uint8_t static_buffer[64];

static void hex(char *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
}

static void load(void)
{
    if (driver) return;
    driver = dlopen(real_path, RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        printf("error load %s\n", dlerror());
        exit(1);
    }
    get_table = (get_table_fn)dlsym(driver, "cuGetExportTable");
    Dl_info info;
    void *f = dlsym(driver, "cuInit");
    printf("loaded path=%s libcuda=%lx\n", real_path, f && dladdr(f, &info) ? (unsigned long)(uintptr_t)info.dli_fbase : 0ul);
}

static void ask_table(size_t t)
{
    if (tables[t] || !get_table) return;
    const void *table = NULL;
    int rc = get_table(&table, known_tables[t].uuid);
    tables[t] = rc == 0 ? table : NULL;
    char u[33];
    hex(u, known_tables[t].uuid, 16);
    printf("table uuid=%s rc=%d addr=%lx slot1=%lx\n", u, rc, (unsigned long)(uintptr_t)table,
           table ? (unsigned long)((const uint64_t *)table)[1] : 0ul);
}

/* One call per (version, time) into buffer b (64 bytes, guarded). */
static void call_all(const char *step, uint8_t *b)
{
    load();
    printf("thread step=%s pid=%d tid=%ld self=%lx\n", step, (int)getpid(), (long)syscall(SYS_gettid),
           (unsigned long)(uintptr_t)pthread_self());
    ask_table(KT_INTEGRITY);
    if (!tables[KT_INTEGRITY]) {
        printf("answer step=%s v=0 ts=0 rc=notable out=- overrun=0\n", step);
        return;
    }
    integrity_fn slot1 = (integrity_fn)(uintptr_t)tables[KT_INTEGRITY][1];
    for (unsigned t = 0; t < time_count; t++) {
        for (unsigned v = 0; v < version_count; v++) {
            memset(b, GUARD, 64);
            int rc = slot1(versions[v], times[t], b);
            unsigned overrun = 0;
            for (int i = 16; i < 64; i++) overrun += b[i] != GUARD;
            char h[33];
            hex(h, b, 16);
            printf("answer step=%s v=%u ts=%lu rc=%d out=%s overrun=%u\n", step, versions[v], (unsigned long)times[t], rc,
                   h, overrun);
        }
    }
}

__attribute__((noinline)) static void site_a(const char *step)
{
    uint8_t b[64];
    call_all(step, b);
}

/* Another caller, further down the stack. */
__attribute__((noinline)) static void site_b(const char *step, int depth)
{
    volatile uint8_t pad[512];
    pad[depth % 512] = 1;
    if (depth > 0) {
        site_b(step, depth - 1);
        return;
    }
    uint8_t b[64];
    call_all(step, b);
    (void)pad[0];
}

static void *thread_main(void *step)
{
    site_a(step);
    return NULL;
}

static void site_a_void(void *step) { site_a(step); }

/* Two new threads, the second after the first has gone. */
static void ask_sequence(const char *step)
{
    static char names[2][80];
    for (int i = 0; i < 2; i++) {
        pthread_t th;
        snprintf(names[i], sizeof names[i], "%s-%d", step, i + 1);
        if (pthread_create(&th, NULL, thread_main, names[i]) == 0) pthread_join(th, NULL);
    }
}

static void ask_at(const char *step, const char *addr, uint64_t stack_bytes)
{
    char err[200];
    uint64_t self = strtoull(addr, NULL, 16);
    load();
    if (thread_at_run_sized(self, stack_bytes, site_a_void, (void *)step, err, sizeof err) != 0)
        printf("thread step=%s error=%s\n", step, err);
}

static ucontext_t ctx_main, ctx_other;
static const char *ctx_step;
static void ctx_entry(void) { site_a(ctx_step); }

static void ask_other_stack(const char *step)
{
    size_t bytes = 512 * 1024;
    void *stack = malloc(bytes);
    load();
    if (!stack || getcontext(&ctx_other) != 0) return;
    ctx_other.uc_stack.ss_sp = stack;
    ctx_other.uc_stack.ss_size = bytes;
    ctx_other.uc_link = &ctx_main;
    ctx_step = step;
    makecontext(&ctx_other, ctx_entry, 0);
    int local;
    printf("stack step=%s main=%lx other=%lx\n", step, (unsigned long)(uintptr_t)&local,
           (unsigned long)(uintptr_t)stack);
    swapcontext(&ctx_main, &ctx_other);
    free(stack);
}

/* The calls with one word of this thread's descriptor changed (0x28 the stack guard, 0x30
 * the pointer guard), given back after them. */
static void ask_with_fs_word(const char *step, uint64_t offset)
{
    uint8_t b[64];
    load();
    uint64_t old = thread_word(offset);
    printf("changed step=%s what=%%fs:0x%lx\n", step, (unsigned long)offset);
    thread_set_word(offset, old ^ 0x5a5a5a5a5a5a5a00ull);
    call_all(step, b);
    thread_set_word(offset, old);
}

static void ask_with_at_random(const char *step)
{
    uint8_t b[64], saved[16];
    uint8_t *r = (uint8_t *)(uintptr_t)getauxval(AT_RANDOM);
    load();
    if (!r) {
        printf("changed step=%s what=AT_RANDOM error=none\n", step);
        return;
    }
    memcpy(saved, r, 16);
    for (int i = 0; i < 16; i++) r[i] ^= 0xa5;
    printf("changed step=%s what=AT_RANDOM\n", step);
    call_all(step, b);
    memcpy(r, saved, 16);
}

static void ask_from_child(const char *step)
{
    char name[80];
    snprintf(name, sizeof name, "%s-child", step);
    load();
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        uint8_t b[64];
        alarm(10); /* a driver lock held by a thread the child does not have: no hang */
        call_all(name, b);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (c > 0) waitpid(c, &status, 0);
    printf("fork step=%s child=%d status=%d\n", step, (int)c, status);
}

static void hooks(void)
{
    load();
    ask_table(KT_HOOKS);
    if (!tables[KT_HOOKS]) return;
    for (int slot = 2; slot <= 6; slot += 4) {
        void *p = NULL;
        size_t n = 0;
        ((hook_fn)(uintptr_t)tables[KT_HOOKS][slot])(&p, &n);
        printf("hooks slot=%d pointer=%lx size=%zu\n", slot, (unsigned long)(uintptr_t)p, n);
    }
}

static void slot3(const char *how)
{
    load();
    ask_table(KT_LOCAL);
    ask_table(KT_CHECKS);
    if (!tables[KT_CHECKS]) return;
    uint64_t buf[8] = { 0 };
    static uint64_t copy_local[16], copy_checks[16];
    if (strcmp(how, "slot3") == 0 || strcmp(how, "slot3copy") == 0) {
        uint64_t *heap_a = calloc(32, 8), *heap_b = calloc(32, 8);
        buf[0] = (uint64_t)(uintptr_t)tables[KT_LOCAL];
        buf[1] = (uint64_t)(uintptr_t)tables[KT_CHECKS];
        buf[6] = (uint64_t)(uintptr_t)heap_a;
        buf[7] = (uint64_t)(uintptr_t)heap_b;
        if (strcmp(how, "slot3copy") == 0 && tables[KT_LOCAL]) {
            memcpy(copy_local, tables[KT_LOCAL], sizeof copy_local);
            memcpy(copy_checks, tables[KT_CHECKS], 15 * 8);
            buf[0] = (uint64_t)(uintptr_t)copy_local;
            buf[1] = (uint64_t)(uintptr_t)copy_checks;
        }
    }
    int rc = ((six_fn)(uintptr_t)tables[KT_CHECKS][3])((uint64_t)(uintptr_t)buf, sizeof buf, 0, 0, 0, 0);
    char h[129];
    hex(h, (const uint8_t *)buf, sizeof buf);
    printf("slot3 how=%s rc=%d buffer_after=%s\n", how, rc, h);
}

static unsigned parse_list(const char *s, uint64_t *out)
{
    unsigned n = 0;
    while (*s && n < MAX_LIST) {
        char *end;
        out[n++] = strtoull(s, &end, 0);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) break;
    }
    return n;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int a = 1, no_aslr = 0;
    long want_pid = 0;
    times[0] = (uint64_t)time(NULL);
    time_count = 1;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--no-aslr") == 0) {
            no_aslr = 1;
        } else if (a + 1 < argc && strcmp(argv[a], "--pid") == 0) {
            want_pid = strtol(argv[++a], NULL, 10);
        } else if (a + 1 < argc && strcmp(argv[a], "--real") == 0) {
            real_path = argv[++a];
        } else if (a + 1 < argc && strcmp(argv[a], "--ts") == 0) {
            times[0] = strtoull(argv[++a], NULL, 0);
        } else if (a + 1 < argc && strcmp(argv[a], "--ts-list") == 0) {
            time_count = parse_list(argv[++a], times);
        } else if (a + 1 < argc && strcmp(argv[a], "--versions") == 0) {
            uint64_t v[MAX_LIST];
            version_count = parse_list(argv[++a], v);
            for (unsigned i = 0; i < version_count; i++) versions[i] = (unsigned)v[i];
        } else {
            fprintf(stderr, "integrity-probe: unknown option %s (see the comment at the top of probe.c)\n", argv[a]);
            return 2;
        }
    }
    /* without address-space randomisation: the same program run twice gets the same addresses */
    int persona = personality(0xffffffff);
    if (no_aslr && !(persona & ADDR_NO_RANDOMIZE) && !getenv("INTEGRITY_PROBE_REEXEC")) {
        setenv("INTEGRITY_PROBE_REEXEC", "1", 1);
        if (personality((unsigned long)persona | ADDR_NO_RANDOMIZE) != -1) execv("/proc/self/exe", argv);
        printf("probe aslr=cannot-disable\n");
    }
    /* the same program again, as process want_pid of a namespace of its own */
    if (want_pid > 0 && !getenv("INTEGRITY_PROBE_NS")) {
        setenv("INTEGRITY_PROBE_NS", "1", 1);
        fflush(stdout);
        pid_t init = pidns_spawn((pid_t)want_pid, "/proc/self/exe", argv, environ);
        if (init < 0) {
            printf("probe pidns=failed pid=%ld reason=%s\n", want_pid, strerror(errno));
            return 3;
        }
        int status = 0;
        while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    persona = personality(0xffffffff);
    int local;
    printf("probe pid=%d aslr=%s stack=%lx\n", (int)getpid(), persona & ADDR_NO_RANDOMIZE ? "off" : "on",
           (unsigned long)(uintptr_t)&local);
    for (; a < argc; a++) {
        char step[64];
        snprintf(step, sizeof step, "%d:%s", a, argv[a]);
        const char *s = argv[a];
        if (strncmp(s, "premmap:", 8) == 0) {
            size_t mb = strtoul(s + 8, NULL, 10);
            void *p = mmap(NULL, mb << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            printf("premmap mb=%zu at=%lx\n", mb, (unsigned long)(uintptr_t)p);
        } else if (strncmp(s, "block:", 6) == 0) {
            char *end;
            unsigned long at = strtoul(s + 6, &end, 16);
            size_t kb = *end == ':' ? strtoul(end + 1, NULL, 10) : 4;
            void *p = mmap((void *)at, kb << 10, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                           -1, 0);
            printf("block at=%lx kb=%zu got=%lx\n", at, kb, (unsigned long)(uintptr_t)p);
        } else if (strncmp(s, "sbrk:", 5) == 0) {
            void *p = sbrk((intptr_t)strtoul(s + 5, NULL, 10) << 10);
            printf("sbrk at=%lx\n", (unsigned long)(uintptr_t)p);
        } else if (strcmp(s, "load") == 0) {
            load();
        } else if (strcmp(s, "init") == 0) {
            load();
            init_fn f = (init_fn)dlsym(driver, "cuInit");
            printf("init rc=%d\n", f ? f(0) : -1);
        } else if (strcmp(s, "tables") == 0) {
            load();
            for (size_t t = 0; t < KT_CUDART_SET; t++) ask_table(t);
        } else if (strcmp(s, "hooks") == 0) {
            hooks();
        } else if (strncmp(s, "slot3", 5) == 0) {
            slot3(s);
        } else if (strcmp(s, "ask") == 0) {
            site_a(step);
        } else if (strcmp(s, "ask2") == 0) {
            site_b(step, 3);
        } else if (strcmp(s, "askheap") == 0) {
            uint8_t *b = malloc(64);
            call_all(step, b);
            free(b);
        } else if (strcmp(s, "askstatic") == 0) {
            call_all(step, static_buffer);
        } else if (strcmp(s, "askthread") == 0) {
            pthread_t th;
            load();
            if (pthread_create(&th, NULL, thread_main, step) == 0) pthread_join(th, NULL);
        } else if (strcmp(s, "askseq") == 0) {
            load();
            ask_sequence(step);
        } else if (strncmp(s, "askat:", 6) == 0) {
            ask_at(step, s + 6, THREAD_AT_STACK_BYTES);
        } else if (strncmp(s, "askat2:", 7) == 0) {
            ask_at(step, s + 7, 2 * THREAD_AT_STACK_BYTES);
        } else if (strcmp(s, "askctx") == 0) {
            ask_other_stack(step);
        } else if (strcmp(s, "askcanary") == 0) {
            ask_with_fs_word(step, THREAD_STACK_GUARD);
        } else if (strcmp(s, "askguard") == 0) {
            ask_with_fs_word(step, THREAD_POINTER_GUARD);
        } else if (strcmp(s, "askrandom") == 0) {
            ask_with_at_random(step);
        } else if (strcmp(s, "askfork") == 0) {
            ask_from_child(step);
        } else {
            fprintf(stderr, "integrity-probe: unknown step %s\n", s);
            return 2;
        }
    }
    return 0;
}
