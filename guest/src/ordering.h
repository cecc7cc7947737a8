/* What ordering.c offers the session: a thread's call waits until the work other threads of
 * the process queued before it has reached the server's driver. */
#ifndef IVC_ORDERING_H
#define IVC_ORDERING_H

#include "channel.h"

/* Before a call on `self`: waits until the server has consumed every ring record that other
 * threads of this process had published when it was called. CUDA_SUCCESS, or the wait's
 * error (the server went away: CUDA_ERROR_DEVICE_UNAVAILABLE, said on stderr). */
CUresult ivc_ordering_wait(struct ivc_channel *self);

/* The calling thread's calls do not wait (the host-function thread: the work it would wait
 * for may itself wait for the host function it runs). */
void ivc_ordering_exempt_thread(void);

#endif
