/* Device printf and assert output (docs/kernels.md). The driver prints a kernel's printf at
 * synchronisation points, through the stdout of the process that synchronises; here that process
 * is the cuda-server, which keeps the bytes per guest process and says so in the channel's
 * output_pending with the response of the call that flushed them. Before that call returns, the
 * guest reads them and writes them through its own stdout, as the driver would have: in order
 * with what the program itself printed there (same stream, same buffering). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "device_output.h"
#include "ivc_api.h"
#include "log.h"

/* The server keeps at most 1 MiB per process; each read moves nearly a response area. A server
 * that kept saying "pending" with nothing to read stops the loop after this many reads. */
#define MAX_READS 4096

/* This thread's copy of the interrupted call's response, and the text a read answers: each as
 * large as the response area, kept for the thread's life (only threads that saw output pay). */
static _Thread_local uint8_t *kept_response;
static _Thread_local uint8_t *text;
static _Thread_local size_t kept_size;

static int buffers(size_t size)
{
    if (kept_size >= size)
        return 1;
    uint8_t *k = realloc(kept_response, size);
    if (k == NULL)
        return 0;
    kept_response = k;
    uint8_t *t = realloc(text, size);
    if (t == NULL)
        return 0;
    text = t;
    kept_size = size;
    return 1;
}

static int pending(const struct ivc_channel *ch)
{
    return ivc_read32(ch->base + IVC_CH_OUTPUT_PENDING) != 0;
}

void ivc_device_output_deliver(struct ivc_call *call)
{
    struct ivc_channel *ch = call->channel;
    size_t area = ch->region->response_area_size;
    if (area < IVC_MSG_HEADER + 32 || !buffers(area)) {
        ivc_log("device printf output waits on the server but cannot be read (no memory); it stays there");
        return;
    }
    memcpy(kept_response, call->response, call->response_length);
    call->response = kept_response;
    /* room for the text: the area less the header, the two counts and the text's length */
    uint32_t capacity = (uint32_t)(area - IVC_MSG_HEADER - 24);
    for (int reads = 0; reads < MAX_READS && pending(ch); reads++) {
        struct ivc_call read;
        ivc_call_on(&read, ch, IVC_OP_ivc_device_output_read, "ivc_device_output_read");
        ivc_put_u64(&read, capacity);
        CUresult r = ivc_sync(&read);
        uint64_t dropped = 0, withheld = 0, n = 0;
        if (ivc_response(&read)) {
            ivc_get_u64(&read, &dropped);
            ivc_get_u64(&read, &withheld);
            n = ivc_get_buf(&read, text, capacity);
            r = ivc_finish(&read, r);
        }
        if (r != CUDA_SUCCESS) {
            ivc_log("device printf output could not be read (CUresult %d)", r);
            return;
        }
        if (dropped != 0)
            ivc_log("%" PRIu64 " bytes of device printf output were lost: more than the server keeps for a "
                    "process (1 MiB) waited to be read",
                    dropped);
        if (withheld != 0)
            ivc_log("%" PRIu64 " bytes of device printf output were withheld: another process of this VM uses "
                    "the same (primary) context, so they could have been its",
                    withheld);
        if (n != 0)
            fwrite(text, 1, (size_t)n, stdout);
        else if (dropped == 0 && withheld == 0)
            return; /* nothing came: the flag alone does not keep us here */
    }
}

__attribute__((constructor)) static void register_output_reader(void)
{
    ivc_call_on_output_pending(ivc_device_output_deliver);
}
