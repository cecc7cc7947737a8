/* What vmm.c offers other units. */
#ifndef IVC_VMM_H
#define IVC_VMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ivc_cuda_types.h"

/* In a forked child: the parent's mappings are not this process's. */
void ivc_vmm_forget_process(void);

/* Says on stderr, once per `logged` flag (one per refusing place), why `function` is refused
 * with CUDA_ERROR_NOT_SUPPORTED. */
void ivc_refused_once(atomic_int *logged, const char *function, const char *why);

/* At most this many access descriptors travel in one call (the server's AccessDescs.MAX). */
#define IVC_MAX_ACCESS_DESCS 8

/* Packs `count` CUmemAccessDesc as they travel (location type, location id, flags) into
 * `wire` (room for IVC_MAX_ACCESS_DESCS * 3); refuses NULL, a count of 0 or above the
 * maximum, and a location other than a device (with the reason, as `function`). */
CUresult ivc_access_descs_to_wire(const char *function, const CUmemAccessDesc *descs, size_t count, int32_t *wire);

#define IVC_REFUSE(function, why)                                                                   \
    do {                                                                                            \
        static atomic_int logged_;                                                                  \
        ivc_refused_once(&logged_, function, why);                                                  \
        return CUDA_ERROR_NOT_SUPPORTED;                                                            \
    } while (0)

#endif
