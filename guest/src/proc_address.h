/* proc_address.c: which variant cuGetProcAddress(base, cuda_version, flags) answers. */
#ifndef IVC_PROC_ADDRESS_H
#define IVC_PROC_ADDRESS_H

#include "ivc_api.h"

/* The variant cuGetProcAddress(base, cuda_version, flags) answers, or NULL with the reason in
 * *status. */
struct ivc_proc_address;
const struct ivc_proc_address *ivc_proc_address_find(const char *base, int cuda_version, cuuint64_t flags,
                                                     CUdriverProcAddressQueryResult *status);

#endif
