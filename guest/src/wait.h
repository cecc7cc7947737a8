/* What wait.c offers the call path: waiting on a channel until the server has done
 * something. */
#ifndef IVC_WAIT_H
#define IVC_WAIT_H

#include <stdint.h>

#include "channel.h"

/* True once the server has done what the waiter waits for. It may be asked more than
 * once per step (again after guest_waiting = 1), so it only reads, or notes what it read. */
typedef int (*ivc_wait_done)(struct ivc_channel *channel, void *argument);

/* Waits until done(channel, argument). An interruptible wait (the server raises the
 * channel's vector after publishing resp_seq or server_chunk) may sleep on the interrupt
 * once the busy budget is spent. A server that leaves READY, restarts or whose heartbeat
 * stops: one stderr line naming `what`, the channel is marked broken, and
 * CUDA_ERROR_DEVICE_UNAVAILABLE. */
CUresult ivc_wait_until(struct ivc_channel *channel, ivc_wait_done done, void *argument, const char *what,
                        int interruptible);

/* How long a frozen server heartbeat is tolerated: 5 s (tests shorten it). */
extern uint64_t ivc_server_timeout_ns;

#endif
