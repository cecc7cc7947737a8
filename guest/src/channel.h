/* What channel.c offers the units above it: the attached region, channels to claim and
 * give back, the doorbell after a publish, the pool and the copy limits. */
#ifndef IVC_CHANNEL_H
#define IVC_CHANNEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ivc_internal.h"
#include "region.h"

/* One channel as this process uses it: where its areas are, and the counters this side
 * writes, kept here so that publishing needs no read of shared memory. */
/* The longest explanation of a channel's loss kept for later (wait.c, session.c). */
#define IVC_CHANNEL_LOSS_MAX 400

struct ivc_channel {
    const struct ivc_region *region;
    uint8_t *base;
    uint32_t index;
    uint8_t *request;
    uint8_t *response;
    uint8_t *ring;
    uint8_t *window;
    uint64_t token;          /* the owner value it was claimed with */
    uint64_t seq;            /* last req_seq written */
    uint64_t ring_tail;      /* bytes ever written to the ring */
    uint64_t ring_head_seen; /* the server's ring_head as last read: space is known without a read */
    uint64_t chunk;          /* guest_chunk */
    /* For the other threads of this process (ordering.c): ring_tail as last published by the
     * owner thread, and a tail the server's ring_head has been seen at or past. */
    _Atomic uint64_t published_tail;
    _Atomic uint64_t drained_tail;
    int broken;              /* the server stopped answering on it: every call fails */
    /* Why, when it broke after its call had been answered: said by the next call (session.c). */
    char loss[IVC_CHANNEL_LOSS_MAX];
    int in_use;
    int spare;               /* kept by the process after its thread exited (its liveness, §7) */
};

/* The attached region (mapped and validated on first use), or NULL when attaching failed
 * (CUDA_ERROR_NOT_INITIALIZED, said on stderr). */
const struct ivc_region *ivc_region(CUresult *error);

/* CUDA_SUCCESS once the region is attached, else ivc_region's error. */
static inline CUresult ivc_need_region(void)
{
    CUresult r;
    return ivc_region(&r) != NULL ? CUDA_SUCCESS : r;
}

/* Claims a channel for the calling thread: the process's spare one, else a free channel at
 * rest (attaching first, which starts the heartbeat). When every channel is taken it waits
 * up to the header's owner_timeout_ms and 2 s more for one to come free (the server
 * reclaims a dead process's channels in that time), then answers CUDA_ERROR_OUT_OF_MEMORY.
 * The caller says hello on it next. */
CUresult ivc_channel_claim(struct ivc_channel **out);
/* At thread exit, after the goodbye: keeps the channel as the process's spare if it is the
 * last one the process holds, so the process stays visible to the server's liveness check
 * while it holds server-side state (§7). Returns 1 if kept. */
int ivc_channel_keep_if_last(struct ivc_channel *channel);
/* Gives the channel back if it is at rest; one with a request still unanswered stays
 * this process's until the server reclaims it (§3, §7). */
void ivc_channel_release(struct ivc_channel *channel);
/* Whether this process holds any channel. */
int ivc_channel_any_in_use(void);
/* At process exit: stops the heartbeat and gives back every held channel at rest. */
void ivc_channel_release_all(void);
/* In a forked child: the parent's channels stay the parent's; a new token for new claims. */
void ivc_channel_forget_process(void);
/* The server replaced its CUDA process (docs/protocol.md §7, "A server that restarts"): waits,
 * bounded, for READY with a new epoch, then forgets every channel claim of this process (the new
 * server wiped the table). Only for a process without CUDA state on the server. */
CUresult ivc_channel_follow_restart(void);

/* After the owner thread published a new ring_tail (call.c): makes the queued work visible to
 * the process's other threads, which order their calls after it (ordering.c). */
void ivc_channel_mark_queued(struct ivc_channel *channel, uint64_t tail);
/* Calls fn(channel, argument) for every channel of this process that has queued ring work
 * since it was claimed, but `except`; stops at and returns the first non-zero result. */
int ivc_channel_for_each_queued(const struct ivc_channel *except, int (*fn)(struct ivc_channel *, void *),
                                void *argument);
/* This process's owner token (0 before it attached). */
uint64_t ivc_channel_process_token(void);

/* After publishing req_seq, ring_tail or guest_chunk: rings the doorbell if the server's
 * worker is parked. Store, then load server_parked: a full fence between (§8). Inline
 * because every call passes here. */
static inline void ivc_channel_notify(const struct ivc_channel *channel)
{
    if (!(channel->region->feature_bits & IVC_FEATURE_DOORBELL))
        return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ivc_load32(channel->base + IVC_CH_SERVER_PARKED) == 1)
        ivc_region_ring_doorbell(channel->region, channel->index);
}

/* The attached region's pool (§6: pinned host memory travels by offset) and the sizes
 * that choose a copy's path. Before attaching: nothing is in the pool, no copy is inline. */
int ivc_in_pool(const void *pointer, size_t size);
uint64_t ivc_pool_offset(const void *pointer);
void *ivc_pool_pointer(uint64_t offset);
/* The largest copy that travels inline in a request or response (§6). */
size_t ivc_inline_limit(void);

#endif
