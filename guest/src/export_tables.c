/* cuGetExportTable: the driver's private function tables, asked for by UUID by cudart (static
 * in every nvcc program and every NVIDIA library), cuBLASLt and NVML. They take guest pointers
 * and callbacks, so they are emulated here, in the process, not forwarded.
 *
 * Each table is one row of export_tables.inc: its UUID, the first word (the table's size in
 * bytes, or none), how many function slots follow, what the real driver answers, and which
 * slots are emulated. A slot nobody has emulated answers CUDA_ERROR_NOT_SUPPORTED and says once
 * on stderr which table and slot, with the first argument registers, so that a program that
 * needs it names it. docs/export-tables.md says how each layout was established and what is
 * still to be confirmed on the GPU machine. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

/* Words a table may have (size word included); cuBLASLt's 21318c60 has 93. */
#define MAX_WORDS 100

struct export_slot {
    unsigned index;
    void (*function)(void);
};

struct export_table {
    const char *name;
    unsigned char uuid[16];
    uint64_t size_word; /* word 0 when the table starts with its size; 0 when it has no size word */
    unsigned slots;     /* function slots after the size word (numbered from 1), or from word 0 */
    CUresult answer;    /* what cuGetExportTable answers for the UUID */
    const struct export_slot *emulated;
};

#define SLOTS(...) ((const struct export_slot[]){__VA_ARGS__, {0, NULL}})
#define SLOT(index, function) {index, (void (*)(void))function}
#define NO_SLOTS ((const struct export_slot[]){{0, NULL}})

static const struct export_table tables[] = {
#include "export_tables.inc"
};
#define TABLE_COUNT (sizeof tables / sizeof tables[0])

/* ---- slots nobody emulates ---------------------------------------------------------- */

static atomic_int unknown_logged[TABLE_COUNT][MAX_WORDS];

static CUresult unknown_slot(unsigned table, unsigned slot, uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d)
{
    if (table < TABLE_COUNT && slot < MAX_WORDS && atomic_exchange(&unknown_logged[table][slot], 1) == 0)
        ivc_log("export table %s (%02x%02x%02x%02x) slot %u is not emulated: CUDA_ERROR_NOT_SUPPORTED "
                "(arguments 0x%lx 0x%lx 0x%lx 0x%lx)",
                tables[table].name, tables[table].uuid[0], tables[table].uuid[1], tables[table].uuid[2],
                tables[table].uuid[3], slot, (unsigned long)a, (unsigned long)b, (unsigned long)c, (unsigned long)d);
    else
        ivc_trace("export table %s slot %u (not emulated) -> %d", table < TABLE_COUNT ? tables[table].name : "?",
                  slot, CUDA_ERROR_NOT_SUPPORTED);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* One function per (table, slot): the slot's number must be known without arguments. The four
 * parameters are the first argument registers of the x86-64 System V convention, whatever the
 * caller passed: read for the log line only. */
#define UNKNOWN(t, d, u)                                                                            \
    static CUresult unknown_##t##_##d##u(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t e)        \
    {                                                                                               \
        return unknown_slot(t, d * 10 + u, a, b, c, e);                                             \
    }
#define UNKNOWN10(t, d)                                                                             \
    UNKNOWN(t, d, 0) UNKNOWN(t, d, 1) UNKNOWN(t, d, 2) UNKNOWN(t, d, 3) UNKNOWN(t, d, 4)            \
    UNKNOWN(t, d, 5) UNKNOWN(t, d, 6) UNKNOWN(t, d, 7) UNKNOWN(t, d, 8) UNKNOWN(t, d, 9)
#define UNKNOWN100(t)                                                                               \
    UNKNOWN10(t, 0) UNKNOWN10(t, 1) UNKNOWN10(t, 2) UNKNOWN10(t, 3) UNKNOWN10(t, 4)                 \
    UNKNOWN10(t, 5) UNKNOWN10(t, 6) UNKNOWN10(t, 7) UNKNOWN10(t, 8) UNKNOWN10(t, 9)
#define ADDRESS(t, d, u) (uintptr_t)unknown_##t##_##d##u,
#define ADDRESS10(t, d)                                                                             \
    ADDRESS(t, d, 0) ADDRESS(t, d, 1) ADDRESS(t, d, 2) ADDRESS(t, d, 3) ADDRESS(t, d, 4)            \
    ADDRESS(t, d, 5) ADDRESS(t, d, 6) ADDRESS(t, d, 7) ADDRESS(t, d, 8) ADDRESS(t, d, 9)
#define ADDRESS100(t)                                                                               \
    {ADDRESS10(t, 0) ADDRESS10(t, 1) ADDRESS10(t, 2) ADDRESS10(t, 3) ADDRESS10(t, 4)               \
     ADDRESS10(t, 5) ADDRESS10(t, 6) ADDRESS10(t, 7) ADDRESS10(t, 8) ADDRESS10(t, 9)},

/* As many rows as export_tables.inc may grow to; a build with more tables fails below. */
#define UNKNOWN_TABLES 14
UNKNOWN100(0) UNKNOWN100(1) UNKNOWN100(2) UNKNOWN100(3) UNKNOWN100(4) UNKNOWN100(5)
UNKNOWN100(6) UNKNOWN100(7) UNKNOWN100(8) UNKNOWN100(9) UNKNOWN100(10) UNKNOWN100(11) UNKNOWN100(12) UNKNOWN100(13)
static const uintptr_t unknown_slots[UNKNOWN_TABLES][MAX_WORDS] = {
    ADDRESS100(0) ADDRESS100(1) ADDRESS100(2) ADDRESS100(3) ADDRESS100(4) ADDRESS100(5)
    ADDRESS100(6) ADDRESS100(7) ADDRESS100(8) ADDRESS100(9) ADDRESS100(10) ADDRESS100(11) ADDRESS100(12) ADDRESS100(13)
};
_Static_assert(TABLE_COUNT <= UNKNOWN_TABLES, "export_tables.inc has more rows than unknown-slot stubs");

/* ---- the tables as the caller sees them ---------------------------------------------- */

static uintptr_t words[TABLE_COUNT][MAX_WORDS];
static pthread_once_t built = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (unsigned t = 0; t < TABLE_COUNT; t++) {
        const struct export_table *table = &tables[t];
        unsigned first = table->size_word != 0; /* slot numbers are word indices */
        if (table->size_word != 0)
            words[t][0] = (uintptr_t)table->size_word;
        for (unsigned s = first; s < first + table->slots && s < MAX_WORDS; s++)
            words[t][s] = unknown_slots[t][s];
        for (const struct export_slot *e = table->emulated; e->function != NULL; e++)
            if (e->index >= first && e->index < first + table->slots)
                words[t][e->index] = (uintptr_t)e->function;
    }
}

/* Tables are described in the order of their words: checked once, here, not at run time. */
int ivc_export_tables_fit(void)
{
    for (unsigned t = 0; t < TABLE_COUNT; t++)
        if ((tables[t].size_word != 0) + tables[t].slots > MAX_WORDS
            || (tables[t].size_word != 0 && tables[t].size_word != 8 * (1 + (uint64_t)tables[t].slots)))
            return 0;
    return 1;
}

const void *ivc_export_table(const unsigned char uuid[16], CUresult *answer, const char **name)
{
    for (unsigned t = 0; t < TABLE_COUNT; t++) {
        if (memcmp(tables[t].uuid, uuid, 16) != 0)
            continue;
        *name = tables[t].name;
        *answer = tables[t].answer;
        if (tables[t].answer != CUDA_SUCCESS)
            return NULL;
        pthread_once(&built, build);
        return words[t];
    }
    *name = NULL;
    *answer = IVC_EXPORT_TABLE_UNKNOWN;
    return NULL;
}
