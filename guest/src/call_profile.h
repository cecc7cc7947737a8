/* IVCUDA_STATS: where a process's CUDA calls went — per function, how many were answered by
 * the server and how long the caller waited for each, how many the cache answered, how many
 * were queued on the ring and how long queueing waited for ring space. Printed at exit; made
 * to find what costs a program its speed through ivcuda (docs/operations.md "Call profile"). */
#ifndef IVC_CALL_PROFILE_H
#define IVC_CALL_PROFILE_H

#include <stddef.h>
#include <stdint.h>

/* Whether IVCUDA_STATS is set (non-empty, not 0): read once, at load. */
extern __attribute__((visibility("hidden"))) int ivc_profile_on;

void ivc_profile_sync(uint32_t opcode, const char *name, uint64_t waited_ns);
void ivc_profile_cached(uint32_t opcode, const char *name);
void ivc_profile_queued(uint32_t opcode, const char *name, uint64_t waited_ns);

/* The table, one line per function, the most waited-for first, at most `lines` of them;
 * returns the bytes written (without the NUL). */
size_t ivc_profile_format(char *text, size_t capacity, int lines);
/* At process exit: the table on stderr, when IVCUDA_STATS is set. */
void ivc_profile_report(void);
/* A forked child starts its own count. */
void ivc_profile_forget_process(void);

#endif
