/* Each thread's current context as the guest last saw it set (current_context.c). */
#ifndef IVC_CURRENT_CONTEXT_H
#define IVC_CURRENT_CONTEXT_H

/* A context was destroyed, or a primary context released or reset, by some thread: any
 * thread's remembered current context may now be wrong; each asks the server again. */
void ivc_current_context_changed_anywhere(void);

#endif
