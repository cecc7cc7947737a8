/* cuGetExportTable, the entry: the table export_tables.c describes for the UUID, handed out where
 * integrity_place.c placed it when it is one of the two tables cudart's integrity check covers.
 * Its own file so that the tables and their placement do not call each other. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"

IVC_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    static atomic_int unknown_logged_once;
    if (ppExportTable == NULL || pExportTableId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    unsigned char uuid[16];
    memcpy(uuid, pExportTableId->bytes, 16);
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    if (!ivc_export_tables_fit()) {
        ivc_log("cuGetExportTable: export_tables.inc describes a table whose size word and slots disagree");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUresult answer;
    const char *name;
    const void *table = ivc_export_table(uuid, &answer, &name);
    if (name == NULL && atomic_exchange(&unknown_logged_once, 1) == 0)
        ivc_log("cuGetExportTable(%s): an export table this library does not know (CUresult %d)", hex, answer);
    ivc_trace("cuGetExportTable(%s) %s -> %d", hex, name ? name : "unknown", answer);
    *ppExportTable = table ? ivc_integrity_placed(uuid, table, ivc_export_table) : NULL;
    return answer;
}
IVC_ALIASES_cuGetExportTable
