/* What interrupts.c offers: the MSI-X vector eventfds a waiting thread may sleep on in
 * doorbell mode instead of polling. */
#ifndef IVC_INTERRUPTS_H
#define IVC_INTERRUPTS_H

#include <stdint.h>

#include "ivc_internal.h"

/* Gets the vector eventfds (daemon socket or IVCUDA_IRQ_EVENTFDS) for an opened region. */
void ivc_interrupts_open(const struct ivc_region *region);
/* Whether a waiter on channel_index may sleep on its vector (one of its own, source alive). */
int ivc_interrupts_usable(uint32_t channel_index, uint32_t channel_count);
/* Takes a count left by an interrupt that came after an earlier sleep ended (before
 * guest_waiting = 1, so that it cannot be the one the next sleep waits for). */
void ivc_interrupts_drain(uint32_t channel_index);
/* Sleeps on the channel's vector up to timeout_ns: 1 interrupt, 0 timeout, -1 source lost. */
int ivc_interrupts_wait(uint32_t channel_index, uint64_t timeout_ns);
/* At process exit: the sleep counters (IVCUDA_STATS, IVCUDA_DEBUG). */
void ivc_interrupts_report(void);
/* In a forked child: the counters were the parent's. */
void ivc_interrupts_forget_process(void);
void ivc_interrupts_stats(uint64_t *wait_count, uint64_t *woken_count);

#endif
