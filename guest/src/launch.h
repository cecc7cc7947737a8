/* Kernel launches (launch.c): what other units need of it. */
#ifndef IVC_LAUNCH_H
#define IVC_LAUNCH_H

#include "ivc_cuda_types.h"

/* In a forked child: parameter layouts are asked again (function handles are per process). */
void ivc_launch_forget_process(void);

/* Launch attributes a launch may carry (the server's bound too). */
#define IVC_MAX_LAUNCH_ATTRIBUTES 16
/* cuLaunchKernelEx's path (ptsz: a NULL stream is the per-thread default stream). */
CUresult ivc_launch_config(const CUlaunchConfig *config, CUfunction f, void **kernelParams, int ptsz);
/* A launch's parameters (kernelParams by the function's layout, or extra's buffer) packed as
 * ivc_launch carries them: *params and *size, valid until the thread's next launch or packing
 * (kernel graph nodes carry them the same way). */
CUresult ivc_launch_pack(CUfunction f, void **kernelParams, void **extra, const void **params, size_t *size);

#endif
