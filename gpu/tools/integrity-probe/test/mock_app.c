/* Plays cudart against mock_driver.c for testing gpu/integrity-probe.sh's machinery: loads
 * libcuda.so.1 as cudart does, asks for the seven tables in cudart's order, calls the hooks
 * and context checks slot 3 as cudart does, and checks the integrity answers against the
 * MOCK computation (mock_integrity.h) from the table addresses it was given. Prints what
 * gpu/tools/integrity-probe/app.cu prints; exit status 0, or 2 when the check failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../known_tables.h"
#include "mock_integrity.h"

typedef int (*get_table_fn)(const void **, const uint8_t *);
typedef int (*integrity_fn)(unsigned, uint64_t, uint8_t *);

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    get_table_fn get_table = h ? (get_table_fn)dlsym(h, "cuGetExportTable") : NULL;
    int (*cu_init)(unsigned) = h ? (int (*)(unsigned))dlsym(h, "cuInit") : NULL;
    if (!get_table || !cu_init) {
        printf("cudart 13000: cudaGetDeviceCount rc=100 (no driver)\n");
        return 2;
    }
    const uint64_t *t[KT_CUDART_SET] = { 0 };
    get_table((const void **)&t[KT_FIRST], known_tables[KT_FIRST].uuid); /* refused is fine */
    cu_init(0);
    for (int i = 1; i < KT_CUDART_SET; i++) {
        if (get_table((const void **)&t[i], known_tables[i].uuid) != 0 || !t[i]) {
            printf("cudart 13000: cudaGetDeviceCount rc=500 (table %d refused)\n", i);
            return 2;
        }
    }
    void *p;
    size_t n;
    ((void (*)(void **, size_t *))(uintptr_t)t[KT_HOOKS][2])(&p, &n);
    ((void (*)(void **, size_t *))(uintptr_t)t[KT_HOOKS][6])(&p, &n);
    uint64_t buf[8] = { (uint64_t)(uintptr_t)t[KT_LOCAL], (uint64_t)(uintptr_t)t[KT_CHECKS] };
    ((int (*)(const void *, size_t))(uintptr_t)t[KT_CHECKS][3])(buf, sizeof buf);
    const uint64_t addresses[4] = { (uint64_t)(uintptr_t)t[KT_CUDART], (uint64_t)(uintptr_t)t[KT_LOCAL],
                                    (uint64_t)(uintptr_t)t[KT_CHECKS], (uint64_t)(uintptr_t)t[KT_INTEGRITY] };
    uint64_t now = (uint64_t)time(NULL);
    int ok = 1;
    for (unsigned v = 13000; v <= 13002; v++) {
        uint8_t got[16], want[16];
        int rc = ((integrity_fn)(uintptr_t)t[KT_INTEGRITY][1])(v, now, got);
        mock_answer(v, now, addresses, want);
        if (rc != 0 || memcmp(got, want, 16) != 0) ok = 0;
    }
    printf("cudart 13000: cudaGetDeviceCount rc=%d (%s) count=1\n", ok ? 0 : 103,
           ok ? "cudaSuccess" : "cudaErrorSoftwareValidityNotEstablished");
    if (!ok) return 2;
    printf("kernel rc=0 (cudaSuccess) right\n");
    return 0;
}
