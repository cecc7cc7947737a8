/* The primary contexts' state as this process last heard it (primary_state.c). */
#ifndef IVC_PRIMARY_STATE_H
#define IVC_PRIMARY_STATE_H

/* This process retained, released or reset a primary context, or set its flags. */
void ivc_primary_state_changed(void);

#endif
