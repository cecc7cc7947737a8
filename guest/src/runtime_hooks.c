/* Export table a094798c, the runtime callback hooks (56 bytes: size word + 6 slots): cudart
 * asks slots 2 and 6 for a buffer and its size each (docs/export-tables.md). The real driver
 * hands out its own zero-initialised storage, through which tools (CUPTI) switch on runtime
 * API callbacks; with no tool attached it stays zero. */
#include <stdint.h>

#include "export_tables.h"
#include "ivc_internal.h"
#include "log.h"

#define HOOK_BUFFER_SIZE 16384

static _Alignas(64) uint8_t hooks_slot2[HOOK_BUFFER_SIZE];
static _Alignas(64) uint8_t hooks_slot6[HOOK_BUFFER_SIZE];

static void hand_out(const char *slot, uint8_t *buffer, void **pointer, size_t *size)
{
    if (pointer != NULL)
        *pointer = buffer;
    if (size != NULL)
        *size = HOOK_BUFFER_SIZE;
    ivc_trace("runtime callback hooks %s -> %p, %d bytes", slot, (void *)buffer, HOOK_BUFFER_SIZE);
}

void ivc_runtime_hooks_slot2(void **pointer, size_t *size)
{
    hand_out("slot 2", hooks_slot2, pointer, size);
}

void ivc_runtime_hooks_slot6(void **pointer, size_t *size)
{
    hand_out("slot 6", hooks_slot6, pointer, size);
}
