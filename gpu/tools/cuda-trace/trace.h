/* cuda-trace: a libcuda.so.1 that forwards every call to NVIDIA's driver and writes down
 * what crossed the boundary (see README.md). Shared declarations of its parts. */
#ifndef CUDA_TRACE_H
#define CUDA_TRACE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_HIDDEN __attribute__((visibility("hidden")))
#define TRACE_EXPORT __attribute__((visibility("default")))

/* Entry ids: 0 .. trace_export_count-1 are the exported names (exports.S, generated from
 * driver-580-exports.txt); TRACE_POOL_BASE .. + TRACE_POOL_SIZE-1 are the pool stubs
 * (trampoline.S) handed out for pointers from cuGetProcAddress and for export-table slots.
 * The pool base and size are also written in trampoline.S. */
#define TRACE_POOL_BASE 1024
#define TRACE_POOL_SIZE 8192
#define TRACE_ENTRY_COUNT (TRACE_POOL_BASE + TRACE_POOL_SIZE)
#define TRACE_POOL_STUB_BYTES 16

/* What the assembly entry saves before calling trace_on_enter; offsets are fixed in
 * trampoline.S. */
struct trace_regs {
    uint64_t args[6]; /* rdi rsi rdx rcx r8 r9 */
    uint64_t rax;     /* al = vector registers used by a variadic call */
    uint64_t id;      /* the entry id the stub put in r11 */
    uint64_t *ret_slot; /* the caller's return-address slot; stack arguments follow it */
    uint64_t r10;
    uint8_t xmm[8][16];
};
_Static_assert(offsetof(struct trace_regs, id) == 56, "trampoline.S offsets");
_Static_assert(offsetof(struct trace_regs, ret_slot) == 64, "trampoline.S offsets");
_Static_assert(offsetof(struct trace_regs, xmm) == 80, "trampoline.S offsets");
_Static_assert(sizeof(struct trace_regs) == 208, "trampoline.S frame size");

/* What trampoline.S's return path saves: the callee's return registers. */
struct trace_ret_regs {
    uint64_t rax;
    uint64_t rdx;
};

enum trace_entry_kind {
    ENTRY_UNUSED = 0,
    ENTRY_EXPORT,   /* an exported name, forwarded to the driver's symbol of that name */
    ENTRY_PROC,     /* a pointer cuGetProcAddress returned that is no exported symbol */
    ENTRY_SLOT,     /* a code slot of an export table */
};

struct trace_entry {
    const char *name;  /* export name, "symbol@version" or "uuid8[slot]" */
    void *real;        /* where calls go */
    uint8_t kind;
    uint16_t table;    /* ENTRY_SLOT: index into the table registry */
    uint16_t slot;     /* ENTRY_SLOT: word index in the table (0 is the size word) */
    _Atomic uint64_t calls;
    _Atomic uint32_t logged; /* ENTRY_SLOT: calls logged for this slot */
};

/* The most bytes dumped per pointer argument (CUDA_TRACE_DUMP_BYTES' limit, calls.c's buffers). */
#define TRACE_MAX_DUMP 128

/* Settings, read once from the environment (README.md lists them). */
struct trace_settings {
    const char *real_path;
    uint32_t max_calls;       /* ordered call records for exported/proc functions */
    uint32_t dump_calls;      /* of those, how many get pointer dumps */
    uint32_t slot_calls;      /* records per export-table slot */
    uint32_t dump_bytes;      /* bytes dumped per pointer argument, at most TRACE_MAX_DUMP */
    uint32_t nosize_words;    /* words copied from a table without a size word */
    int copy_tables;          /* hand out logging copies of export tables */
    const char *nocopy;       /* comma-separated UUID prefixes (hex) whose tables are not copied */
    int track_returns;        /* replace return addresses to log results */
    int deepbind;             /* dlopen the driver with RTLD_DEEPBIND */
    const char *tables;       /* per-table modes (modes.c), overriding copy_tables and nocopy */
    const char *remote;       /* the helper's socket: the integrity check is asked of it */
    int remote_slot3;         /* context checks slot 3 is also replayed in the helper */
    const char *mirror;       /* the helper's table description, for the mirror modes */
    const char *oracle;       /* an oracle helper's socket: an oracle is started for this process */
    unsigned oracle_flags;    /* ORACLE_* of remote_proto.h */
};

/* trace.c: the state every part shares (it calls no other part) */
TRACE_HIDDEN extern struct trace_entry trace_entries[TRACE_ENTRY_COUNT];
TRACE_HIDDEN extern struct trace_settings trace_cfg;
TRACE_HIDDEN extern void *trace_real_handle;
TRACE_HIDDEN int trace_pool_alloc(void);
TRACE_HIDDEN int trace_pool_used(void);
TRACE_HIDDEN void *trace_pool_stub(int id);
TRACE_HIDDEN uint64_t trace_next_seq(void);
TRACE_HIDDEN uint64_t trace_seq_used(void);
TRACE_HIDDEN unsigned trace_count_call(int id);

/* start.c: settings, the driver and the entry table, once, before any call is handled */
TRACE_HIDDEN void trace_ensure_init(void);

/* calls.c: every call through a stub (trampoline.S) */
TRACE_HIDDEN void *trace_on_enter(struct trace_regs *r);
TRACE_HIDDEN uint64_t trace_on_return(struct trace_ret_regs *r, uint64_t *rsp_after);

/* exports.c (generated) */
TRACE_HIDDEN extern const unsigned trace_export_count;
TRACE_HIDDEN extern const char *const trace_export_names[];
TRACE_HIDDEN extern void (*const trace_export_stubs[])(void);
TRACE_HIDDEN int trace_export_id(const char *name);

/* trampoline.S */
TRACE_HIDDEN void trace_pool_stubs(void);
TRACE_HIDDEN void trace_return(void);

/* memdump.c: reading memory that may not be mapped, and saying what an address is */
TRACE_HIDDEN size_t trace_safe_read(void *dst, uint64_t src, size_t n);
TRACE_HIDDEN int trace_is_code(uint64_t addr);
TRACE_HIDDEN int trace_is_shim(uint64_t addr);
/* "lib+0xoff(symbol)" or "" into buf; returns buf */
TRACE_HIDDEN const char *trace_describe_code(uint64_t addr, char *buf, size_t len);
TRACE_HIDDEN const char *trace_object_of(uint64_t addr, char *buf, size_t len);

/* tracelog.c: the log file, one line a record, written whole with one write(2) */
struct trace_line {
    char buf[8192];
    size_t len;
};
TRACE_HIDDEN void trace_log_open(void);
TRACE_HIDDEN void trace_log_after_fork(void);
TRACE_HIDDEN void trace_line_start(struct trace_line *l, const char *tag);
TRACE_HIDDEN void trace_line_add(struct trace_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TRACE_HIDDEN void trace_line_hex(struct trace_line *l, const uint8_t *p, size_t n);
TRACE_HIDDEN void trace_line_end(struct trace_line *l);
TRACE_HIDDEN void trace_logf(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TRACE_HIDDEN uint32_t trace_tid(void);

/* modes.c: how each export table is handed out (CUDA_TRACE_TABLES, README.md) */
enum table_mode {
    MODE_REAL,         /* the driver's table as it is */
    MODE_DEEP,         /* a copy whose code words are logging stubs */
    MODE_SHALLOW,      /* a copy of the words as they are */
    MODE_INPLACE,      /* the driver's table, chosen code words replaced by logging stubs */
    MODE_ANON,         /* the same, through trampolines in anonymous memory */
    MODE_MIRROR,       /* a table at the helper's address, code words logging stubs */
    MODE_MIRROR_EXACT, /* a table at the helper's address with the helper's words, each
                          code word a trampoline at the helper's function address */
    MODE_REFUSE,       /* cuGetExportTable answers CUDA_ERROR_NOT_FOUND */
};
struct table_choice {
    enum table_mode mode;
    uint64_t words[2]; /* INPLACE/ANON: bit i = word i; none set = every code word */
};
TRACE_HIDDEN int trace_modes_parse(const char *spec);
TRACE_HIDDEN struct table_choice trace_table_choice(const char *uuid_hex);
TRACE_HIDDEN const char *trace_mode_name(enum table_mode mode);
TRACE_HIDDEN int trace_choice_has_word(const struct table_choice *c, unsigned word);
TRACE_HIDDEN int trace_modes_mention_mirror(void);

/* placement.c: writing into the driver's tables, trampolines, fixed mappings */
#define TRACE_TRAMPOLINE_BYTES 13
TRACE_HIDDEN int trace_poke(void *dst, const void *src, size_t n);
TRACE_HIDDEN int trace_anon_trampolines(const uint64_t *targets, unsigned n, uint64_t *out);
TRACE_HIDDEN void trace_write_trampoline(uint8_t *at, uint64_t target);
/* 0, or -1 with the address that was taken (EEXIST) or could not be mapped in *busy */
TRACE_HIDDEN int trace_reserve_pages(uint64_t start, uint64_t len, int prot, uint64_t *busy);

/* remote.c: the helper process (gpu/tools/integrity-probe) and its mirror description */
struct mirror_table {
    uint8_t uuid[16];
    uint64_t addr;
    unsigned nwords;
    int has_size;
    uint64_t words[128];
    char kind[128]; /* 's'ize 'n'ull 'c'ode 'd'ata 'v'alue */
    int stub[128];  /* MODE_MIRROR_EXACT: the pool stub the trampoline at words[i] jumps to */
};
TRACE_HIDDEN void trace_mirror_init(void);
/* "pid,self,guards" (CUDA_TRACE_ORACLE_FLAGS) as ORACLE_* bits; unknown words are ignored */
TRACE_HIDDEN unsigned trace_oracle_flags(const char *text);
TRACE_HIDDEN struct mirror_table *trace_mirror_find(const uint8_t uuid[16]);
/* A function to call instead of the driver's for (table, word), or NULL */
TRACE_HIDDEN void *trace_remote_override(const uint8_t uuid[16], unsigned word, void *original);
TRACE_HIDDEN int trace_stub_not_ready(void);
/* Exits (a void run) if something in this process replaced the pages mapped for m since. */
TRACE_HIDDEN void trace_mirror_check(const struct mirror_table *m, int exact);

/* tables.c: logging copies of export tables */
TRACE_HIDDEN const void *trace_table_wrap(const uint8_t uuid[16], const void *real, struct table_choice choice);
TRACE_HIDDEN void trace_table_uuid_text(int table, char *buf, size_t len);
TRACE_HIDDEN void trace_tables_summary(void);

/* procaddr.c: pointers from cuGetProcAddress */
TRACE_HIDDEN void *trace_proc_wrap(void *real, const char *symbol, int version, uint64_t flags);
/* The shim's own cuGetProcAddress[_v2]/cuGetExportTable for the driver's, else real. */
TRACE_HIDDEN void *trace_own_function(void *real);

#endif
