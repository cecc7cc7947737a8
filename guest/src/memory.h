/* What memory.c offers other units: module globals as device memory, and its reset. */
#ifndef IVC_MEMORY_H
#define IVC_MEMORY_H

#include <stddef.h>

#include "ivc_cuda_types.h"

/* A module's global counts as device memory (for cuMemcpy's classification) until the
 * module is unloaded. */
void ivc_memory_add_global(CUmodule module, CUdeviceptr base, size_t size);
void ivc_memory_forget_module(CUmodule module);
/* In a forked child: the parent's allocations are not this process's. */
void ivc_memory_forget_process(void);

#endif
