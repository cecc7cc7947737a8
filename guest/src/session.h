/* Each thread's session with the server (session.c); ivc_begin is declared with the
 * rest of the stubs' interface in ivc_call.h. */
#ifndef IVC_SESSION_H
#define IVC_SESSION_H

/* In a forked child: the forking thread's channel is the parent's, not its own. */
void ivc_session_forget_process(void);

/* This thread's channel while calls can go through it, else NULL: what an answer the guest
 * remembered for the thread is tied to (current_context.c). */
const void *ivc_session_thread_channel(void);

#endif
