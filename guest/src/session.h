/* Each thread's session with the server (session.c); ivc_begin is declared with the
 * rest of the stubs' interface in ivc_call.h. */
#ifndef IVC_SESSION_H
#define IVC_SESSION_H

/* In a forked child: the forking thread's channel is the parent's, not its own. */
void ivc_session_forget_process(void);

/* Which of this thread's channel claims calls go through now (1, 2, ... : each claim is a new
 * session on the server's side), 0 while the thread has no usable channel: what an answer the
 * guest remembered for the thread is tied to (current_context.c, primary_state.c). */
unsigned long ivc_session_thread_claim(void);

#endif
