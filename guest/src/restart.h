/* What restart.c offers: waiting for a cuda-server that is starting, or replacing its CUDA
 * process after a fatal GPU fault (docs/protocol.md §7, "A server that restarts"). */
#ifndef IVC_RESTART_H
#define IVC_RESTART_H

#include <stddef.h>
#include <stdint.h>

/* While the header has the magic and server_state INIT (a server initialising), waits for
 * it to leave INIT, for at most IVCUDA_SERVER_WAIT_S seconds (30 by default). Returns 1 when
 * it left INIT (or was never in it), 0 at the bound. */
int ivc_server_wait_ready(const uint8_t *base, size_t mapped);

/* Waits until the header says READY with an epoch other than `epoch` (the server replaced
 * its CUDA process), within the same bound; gives up at once on STOPPING or STOPPED. Returns
 * the new epoch's server state READY as 1, else 0. */
int ivc_server_wait_new_epoch(const uint8_t *base, uint32_t epoch);

#endif
