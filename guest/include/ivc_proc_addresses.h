/* The table cuGetProcAddress searches (generated into ivc_proc_addresses.c from
 * api/driver-proc-addresses.txt, which is derived from CUDA's *Typedefs.h). */
#ifndef IVC_PROC_ADDRESSES_H
#define IVC_PROC_ADDRESSES_H

#include <stddef.h>

struct ivc_proc_address {
    const char *base;      /* the name cuGetProcAddress is asked for */
    int version;           /* the CUDA version this variant appeared in */
    int per_thread;        /* 1: the _ptds/_ptsz variant (per-thread default stream) */
    void (*function)(void);
    const char *symbol;    /* the ELF symbol, for the trace */
};

/* Sorted by base (strcmp), then version. */
extern const struct ivc_proc_address ivc_proc_addresses[];
extern const size_t ivc_proc_address_count;

#endif
