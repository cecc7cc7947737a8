/* Module loading (module.c): what other units need of it. */
#ifndef IVC_MODULE_H
#define IVC_MODULE_H

#include <stddef.h>

/* The byte size of a module image (fatbin wrapper, fatbin, ELF, PTX); 0 if unknown. */
size_t ivc_image_size(const void *image);
/* In a forked child: no image has been sent by this process yet. */
void ivc_module_forget_process(void);

#endif
