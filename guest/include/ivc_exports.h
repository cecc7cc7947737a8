/* The table cuGetProcAddress searches (generated into ivc_exports.c). */
#ifndef IVC_EXPORTS_H
#define IVC_EXPORTS_H

#include <stddef.h>

struct ivc_export {
    const char *base;      /* the name cuGetProcAddress is asked for */
    int version;           /* the CUDA version from which this symbol answers it */
    const char *symbol;    /* the ELF symbol */
    void (*function)(void);
    void (*per_thread)(void); /* the _ptds/_ptsz variant, or NULL */
};

extern const struct ivc_export ivc_export_table[];
extern const size_t ivc_export_count;

#endif
