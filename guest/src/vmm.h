/* What vmm.c offers other units. */
#ifndef IVC_VMM_H
#define IVC_VMM_H

/* In a forked child: the parent's mappings are not this process's. */
void ivc_vmm_forget_process(void);

#endif
