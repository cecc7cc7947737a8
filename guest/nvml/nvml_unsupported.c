/* Every NVML name the guest does not answer (nvml_unsupported.inc): found, and answering
 * NVML_ERROR_NOT_SUPPORTED. Their arguments are never read, so one signature serves all. */
#include "nvml_session.h"

#define X(name)                                                                                     \
    NVML_EXPORT nvmlReturn_t name(void);                                                            \
    NVML_EXPORT nvmlReturn_t name(void)                                                             \
    {                                                                                               \
        return NVML_ERROR_NOT_SUPPORTED;                                                            \
    }
#include "nvml_unsupported.inc"
#undef X
