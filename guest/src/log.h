/* What log.c offers: one-line stderr messages (ivc_log) and the IVCUDA_DEBUG call trace
 * (ivc_trace). */
#ifndef IVC_LOG_H
#define IVC_LOG_H

void ivc_log(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Whether IVCUDA_DEBUG is set (non-empty, not 0): read once. */
int ivc_debug(void);
/* A line of the call trace, with pid and tid; nothing unless ivc_debug(). */
void ivc_trace(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
