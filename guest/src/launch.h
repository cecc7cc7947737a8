/* Kernel launches (launch.c): what other units need of it. */
#ifndef IVC_LAUNCH_H
#define IVC_LAUNCH_H

/* In a forked child: parameter layouts are asked again (function handles are per process). */
void ivc_launch_forget_process(void);

#endif
