/* JIT logs of the linker and of module and library loads (jit_logs.c, docs/kernels.md "JIT logs"). */
#ifndef IVC_JIT_LOGS_H
#define IVC_JIT_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "ivc_internal.h"

/* What a program asked of the output options of cuLinkCreate (or of a load): log buffers (info, error) with their
 * sizes and where those options sit in its arrays, and where CU_JIT_WALL_TIME sits (-1: none). */
struct ivc_jit_logs {
    char *buffer[2];
    unsigned size[2];
    int size_slot[2];
    int wall_slot;
};

/* Reads the program's options (before ivc_jit_pairs answers their outputs empty); answers
 * whether any log or the wall time was asked for. */
int ivc_jit_logs_scan(struct ivc_jit_logs *logs, unsigned numOptions, const CUjit_option *options,
                      void *const *values);

/* Appends to jit (pairs so far in *pairs, at most max_pairs) what the server needs: the logs'
 * sizes as their _SIZE_BYTES options, and CU_JIT_WALL_TIME. */
void ivc_jit_logs_pairs(const struct ivc_jit_logs *logs, uint64_t *jit, size_t *pairs, size_t max_pairs);

/* cuLinkCreate succeeded: remembers where the state's logs and outputs go, for its life. */
void ivc_jit_logs_keep(CUlinkState state, const struct ivc_jit_logs *logs, void **values);

/* After a call of the link state: copies what the server's driver logged into the program's
 * buffers and sets the size and wall-time options as the driver does. Nothing if none was asked. */
void ivc_jit_logs_update(CUlinkState state);

/* After a module or library load that asked for logs or the wall time: copies what the server's
 * driver logged during the channel's last load into the program's buffers and sets the size and
 * wall-time options as the driver does. */
void ivc_jit_logs_after_load(const struct ivc_jit_logs *logs, void **values);

/* cuLinkDestroy: forgets the state's logs. */
void ivc_jit_logs_forget(CUlinkState state);

#endif
