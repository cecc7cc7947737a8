/* Each thread's session with the server (session.c); ivc_begin is declared with the
 * rest of the stubs' interface in ivc_call.h. */
#ifndef IVC_SESSION_H
#define IVC_SESSION_H

/* In a forked child: the forking thread's channel is the parent's, not its own. */
void ivc_session_forget_process(void);

#endif
