/* How the library speaks: one-line stderr messages that start with "ivcuda:" (ivc_log)
 * and the IVCUDA_DEBUG call trace (ivc_trace). Every unit uses them; they use nothing of
 * the library, so any unit may report from anywhere without a loop. */
#ifndef IVC_LOG_H
#define IVC_LOG_H

void ivc_log(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Whether IVCUDA_DEBUG is set (non-empty, not 0): read once. */
int ivc_debug(void);
/* A line of the call trace, with pid and tid; nothing unless ivc_debug(). */
void ivc_trace(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
