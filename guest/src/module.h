/* Module loading (module.c): what other units need of it. */
#ifndef IVC_MODULE_H
#define IVC_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "ivc_cuda_types.h"

#define IVC_MAX_JIT_OPTIONS 64

struct ivc_jit_logs;

/* Loads an image as a module (library 0: ivc_module_load) or a library (1: ivc_library_load),
 * sending its bytes only if this process has not sent them yet; name: the caller, for logs.
 * logs (NULL: none asked for): once the server has answered, the load's JIT logs and wall time go
 * into the program's buffers and its option values (jit_logs.c), failed loads too. */
CUresult ivc_load_image(int library, void **handle, const void *image, const uint64_t *jit, size_t jit_size,
                        const char *name, const struct ivc_jit_logs *logs, void **values);
/* cuModuleLoadDataEx's options as (option, value) pairs of the scalar ones in jit (*count pairs);
 * log buffers are answered empty here (ivc_jit_logs_scan reads them first, and the load's logs
 * replace that). CUDA_ERROR_INVALID_VALUE for more than IVC_MAX_JIT_OPTIONS. */
CUresult ivc_jit_pairs(uint64_t jit[2 * IVC_MAX_JIT_OPTIONS], size_t *count, unsigned int numOptions,
                       CUjit_option *options, void **optionValues);

/* The byte size of a module image (fatbin wrapper, fatbin, ELF, PTX); 0 if unknown. */
size_t ivc_image_size(const void *image);
/* In a forked child: no image has been sent by this process yet. */
void ivc_module_forget_process(void);

#endif
