/* The call path's entries for the session above it (session.c), beside the stubs'
 * interface (ivc_call.h, implemented in call.c and window.c). */
#ifndef IVC_CALL_INTERNAL_H
#define IVC_CALL_INTERNAL_H

#include <stdatomic.h>

#include "channel.h"
#include "ivc_call.h"

/* Set by call.c when cuInit's response says success; read through ivc_call_initialized,
 * inline because every call starts with it. */
extern __attribute__((visibility("hidden"))) atomic_int ivc_cuinit_succeeded;

/* Whether cuInit has succeeded in this process: the real driver answers every other call
 * before it with CUDA_ERROR_NOT_INITIALIZED, cached ones too. */
static inline int ivc_call_initialized(void)
{
    return atomic_load_explicit(&ivc_cuinit_succeeded, memory_order_acquire);
}

/* What runs when a response arrives with the channel's output_pending set (§3): the device
 * output unit (device_output.c) registers itself at load, so the call path does not name the
 * feature above it. It keeps `call`'s response decodable as if nothing happened. */
typedef void (*ivc_output_pending_fn)(struct ivc_call *call);
void ivc_call_on_output_pending(ivc_output_pending_fn fn);

/* Starts a call on a channel the caller holds: the payload goes into its request area,
 * after the 16-byte message header (§4). */
static inline void ivc_call_on(struct ivc_call *call, struct ivc_channel *channel, uint32_t opcode, const char *name)
{
    *call = (struct ivc_call){
        .channel = channel,
        .name = name,
        .opcode = opcode,
        .payload = channel->request + IVC_MSG_HEADER,
        .capacity = channel->region->request_area_size - IVC_MSG_HEADER,
    };
}

#endif
