/* What pinned.c offers: the pinned host blocks this process holds. */
#ifndef IVC_PINNED_H
#define IVC_PINNED_H

#include "range_map.h"

/* Whether pointer lies in a pinned block of this process; the block into *block. */
int ivc_pinned_find(const void *pointer, struct ivc_range *block);
/* In a forked child: the parent's blocks are not this process's. */
void ivc_pinned_forget_process(void);
/* Whether pointer lies in a range registered with cuMemHostRegister (hostreg.c); the range,
 * with its flags and the context current at registration, into *range. */
int ivc_registered_find(const void *pointer, struct ivc_range *range);

#endif
