/* What region.c offers: finding and mapping the region, and its doorbell (the header checks
 * are region_check.h's). It stands above region_check.c and region_place.c; the interrupt
 * daemon (tools/ivcuda-guest-irqd.c) links it too, for the same PCI scan. */
/* (not IVC_REGION_H: that guards the generated layout, ivc_region.h) */
#ifndef IVC_REGION_INTERNAL_H
#define IVC_REGION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ivc_internal.h"

/* "3,4,5": at most capacity descriptors into fds; their number, or -1 if the list is malformed. */
int ivc_parse_fd_list(const char *list, int *fds, uint32_t capacity);
/* A sysfs number such as vendor (0x1af4): 0 if the file cannot be read as hex. */
int ivc_read_hex_file(const char *path, unsigned long *value);
/* The first PCI device 1af4:1110 under <IVCUDA_SYSFS_ROOT or /sys>/bus/pci/devices whose
 * BAR2 starts with the magic: its sysfs directory and BAR2 mapped. 0 with a message if none. */
int ivc_pci_find(char *device_dir, size_t dir_capacity, uint8_t **base, size_t *size, char *message,
                 size_t capacity);
/* Finds, maps and validates the region (IVCUDA_REGION or the PCI scan), then places it (region_place.h). */
CUresult ivc_region_open(struct ivc_region *region);
void ivc_region_close(struct ivc_region *region);
void ivc_region_ring_doorbell(const struct ivc_region *region, uint32_t channel_index);

#endif
