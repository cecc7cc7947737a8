/* A user namespace of one's own for the integrity oracle: the capabilities a PID namespace
 * with a chosen pid needs (clone3 set_tid asks for CAP_SYS_ADMIN over the namespace) without
 * any over the host. The namespace maps only the caller's own uid and gid to themselves, so
 * that files and devices (the GPU's /dev/nvidia*) are opened as before and nothing else is. */
#ifndef USERNS_H
#define USERNS_H

#include <stddef.h>

/* Enters a new user namespace with the caller's uid and gid mapped to themselves. 0, or -1
 * with the reason in err. The capabilities it gives last until the next execve. */
int userns_enter(char *err, size_t errlen);

#endif
