/* The emulated export tables (export_tables.c) and the slots other files emulate. */
#ifndef IVC_EXPORT_TABLES_H
#define IVC_EXPORT_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "ivc_cuda_types.h"

/* What cuGetExportTable answers for a UUID it does not know (docs/export-tables.md, question 1). */
#define IVC_EXPORT_TABLE_UNKNOWN CUDA_ERROR_INVALID_VALUE

/* Whether export_tables.inc's rows agree with themselves (size words and slots), checked once. */
int ivc_export_tables_fit(void);

/* The table's words for a UUID, with the answer and the table's name (NULL: unknown UUID). */
const void *ivc_export_table(const unsigned char uuid[16], CUresult *answer, const char **name);

/* cudart_interface.c (6bd5fb6c) */
CUresult ivc_cudart_module_from_fatbin(CUmodule *module, const void *wrapper);
CUresult ivc_cudart_primary_context(CUcontext *pctx, CUdevice dev);
CUresult ivc_cudart_module_from_fatbin_ext(CUmodule *module, const void *wrapper, const void *extra1,
                                           const void *extra2, unsigned flags);
CUresult ivc_cudart_slot7(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d);

/* context_local.c (c693336e) */
typedef void (*ivc_context_local_destructor)(CUcontext context, void *key, void *value);
CUresult ivc_context_local_put(CUcontext context, void *key, void *value, ivc_context_local_destructor destructor);
CUresult ivc_context_local_remove(CUcontext context, void *key);
CUresult ivc_context_local_get(void **value, CUcontext context, void *key);
/* Runs and drops the destructors of a context's values (it is being destroyed or reset). */
void ivc_context_local_destroy(CUcontext context);

/* context_checks.c (263e8860) */
CUresult ivc_context_check(CUcontext context, unsigned *first, const void **second);
CUresult ivc_context_check3(void *buffer, size_t size);

/* integrity_check.c (d4082055) */
CUresult ivc_integrity_check(unsigned version, uint64_t unix_seconds, uint64_t result[2]);

/* integrity_place.c: 6bd5fb6c and d4082055 at the integrity oracle's addresses. The table to
 * hand out for uuid (ours placed there, or `table` itself for any other uuid or when it cannot
 * be placed; the two tables to place come from `lookup`, ivc_export_table, handed in by the
 * caller so that the placement stays below the tables it places and the check in them);
 * whether the placement was made; whether this pid's oracle has the same addresses. */
typedef const void *(*ivc_export_table_lookup)(const unsigned char uuid[16], CUresult *answer, const char **name);
const void *ivc_integrity_placed(const unsigned char uuid[16], const void *table, ivc_export_table_lookup lookup);
int ivc_integrity_is_placed(void);
int ivc_integrity_placement_matches(void);

/* runtime_hooks.c (a094798c) */
void ivc_runtime_hooks_slot2(void **pointer, size_t *size);
void ivc_runtime_hooks_slot6(void **pointer, size_t *size);
CUresult ivc_tools_tls_slot2(void **state);

/* compile_cache.c (da9151d3, NVRTC's use of the driver's compute cache) */
CUresult ivc_compile_cache_key(void **key, int kind, const void *input, size_t size, const char *options);
CUresult ivc_compile_cache_drop(void *key);
CUresult ivc_compile_cache_lookup(void *key, uintptr_t unknown, void **data, uint32_t *size);
CUresult ivc_compile_cache_store(void *key, uintptr_t unknown, const void *data, size_t size);
CUresult ivc_compile_cache_free(void *data, uintptr_t unknown, size_t size);

/* sm_topology.c (1734dc26, cuBLASLt's nvjet kernels) */
CUresult ivc_sm_topology_get(uint8_t **first, uint8_t **second);
CUresult ivc_sm_topology_release(void *first, void *second);

/* cufft_table.c (6e163fbe) */
int ivc_cufft_module_functions(CUcontext context, CUmodule module, void (*report)(void *user, CUfunction function),
                               void *user);

/* cublaslt_table.c (21318c60) */
CUresult ivc_cublaslt_slot4(CUcontext context, uint64_t *out);
CUresult ivc_cublaslt_stream_object(CUcontext context, CUstream stream, void **out);
CUresult ivc_cublaslt_stream_id(CUcontext context, void *object, uint64_t *out);

#endif
