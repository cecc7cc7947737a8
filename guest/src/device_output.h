/* Device printf and assert output (docs/kernels.md): what the server's driver printed for this
 * process's kernels, written to this process's stdout before the call that flushed it returns. */
#ifndef IVC_DEVICE_OUTPUT_H
#define IVC_DEVICE_OUTPUT_H

#include "ivc_call.h"

/* The server set the channel's output_pending with call's response: reads what waits
 * (ivc_device_output_read, on the same channel) and writes it to stdout. The response of `call`
 * is kept in memory of the thread's own first, so the caller decodes it as if nothing happened. */
void ivc_device_output_deliver(struct ivc_call *call);

#endif
