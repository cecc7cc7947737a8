/* cuGetExportTable and the emulated tables, against the in-process fake server: every UUID of
 * api/reference answers with the real driver's size word, f8cff951 and unknown UUIDs are
 * refused, slots nobody emulates answer NOT_SUPPORTED, context-local storage keeps values per
 * context and runs their destructors when the context is destroyed, reset or last released,
 * the runtime hooks hand out buffers, and the integrity check goes to the server. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "export_tables.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

CUresult cuGetExportTable(const void **, const CUuuid *);

typedef CUresult (*put_fn)(CUcontext, void *, void *, ivc_context_local_destructor);
typedef CUresult (*remove_fn)(CUcontext, void *);
typedef CUresult (*get_fn)(void **, CUcontext, void *);
typedef CUresult (*check_fn)(CUcontext, unsigned *, const void **);
typedef void (*hooks_fn)(void **, size_t *);
typedef CUresult (*integrity_fn)(unsigned, uint64_t, uint64_t *);
typedef CUresult (*unknown_fn)(void);
typedef CUresult (*primary_fn)(CUcontext *, CUdevice);
typedef CUresult (*module_fn)(CUmodule *, const void *);
typedef CUresult (*module_ext_fn)(CUmodule *, const void *, const void *, const void *, unsigned);

static CUuuid uuid_of(const char *hex)
{
    CUuuid u;
    for (int i = 0; i < 16; i++) {
        unsigned byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        u.bytes[i] = (char)byte;
    }
    return u;
}

static const uintptr_t *table(const char *hex, CUresult *result)
{
    CUuuid u = uuid_of(hex);
    const void *t = (const void *)1;
    *result = cuGetExportTable(&t, &u);
    return t;
}

/* The sizes the real driver 580 answered (api/reference, EXP lines). */
static void test_sizes_and_refusals(void)
{
    static const struct {
        const char *uuid;
        uint64_t size;
    } known[] = {
        {"6bd5fb6c5bf4e74a8987d93912fd9df9", 104}, {"a094798c2e742e7493f20800200c0a66", 56},
        {"42d85a8123f6cb478298f6e78a3aecdc", 24},  {"263e88607cd2614392f6bbd5006dfa7e", 120},
        {"d4082055bde6704b8d34ba123c66e1f2", 24},  {"21318c60971432488ca641ff7324c8f2", 744},
        {"69a28e9f24498b47b030c5da330ea4e9", 272},
    };
    CUresult r;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const uintptr_t *t = table(known[i].uuid, &r);
        int good = r == CUDA_SUCCESS && t != NULL && t[0] == known[i].size && t[known[i].size / 8 - 1] != 0;
        CHECK(good);
        if (!good)
            fprintf(stderr, "  table %s: result %d\n", known[i].uuid, r);
    }
    /* context-local storage has no size word: its first word is a function */
    const uintptr_t *cls = table("c693336e1121df11a8c368f355d89593", &r);
    CHECK(r == CUDA_SUCCESS && cls != NULL && cls[0] == (uintptr_t)ivc_context_local_put);
    /* f8cff951: refused with NOT_FOUND, which lets cudart go on (docs/export-tables.md) */
    CHECK(table("f8cff95121468b4eb9e2fb469e7c0dd9", &r) == NULL && r == CUDA_ERROR_NOT_FOUND);
    CHECK(table("00112233445566778899aabbccddeeff", &r) == NULL && r == IVC_EXPORT_TABLE_UNKNOWN);
    CUuuid u = uuid_of("6bd5fb6c5bf4e74a8987d93912fd9df9");
    CHECK(cuGetExportTable(NULL, &u) == CUDA_ERROR_INVALID_VALUE);
    const void *t;
    CHECK(cuGetExportTable(&t, NULL) == CUDA_ERROR_INVALID_VALUE);
    /* a slot nobody emulates answers, rather than crashing its caller */
    const uintptr_t *lt = table("21318c60971432488ca641ff7324c8f2", &r);
    CHECK(((unknown_fn)lt[5])() == CUDA_ERROR_NOT_SUPPORTED && ((unknown_fn)lt[92])() == CUDA_ERROR_NOT_SUPPORTED);
    /* the same table twice is the same table */
    CHECK(table("263e88607cd2614392f6bbd5006dfa7e", &r) == table("263e88607cd2614392f6bbd5006dfa7e", &r));
}

static int destructor_calls;
static void *destroyed_value;

static void destructor(CUcontext context, void *key, void *value)
{
    (void)context;
    (void)key;
    destructor_calls++;
    destroyed_value = value;
}

static void test_context_local_storage(void)
{
    CUresult r;
    const uintptr_t *cls = table("c693336e1121df11a8c368f355d89593", &r);
    put_fn put = (put_fn)cls[0];
    remove_fn remove_value = (remove_fn)cls[1];
    get_fn get = (get_fn)cls[2];
    CUcontext a = (CUcontext)0x0100000200000001ULL, b = (CUcontext)0x0100000200000002ULL;
    int key1, key2, v1, v2, v3;
    void *value = (void *)1;
    CHECK(get(&value, a, &key1) == CUDA_ERROR_NOT_FOUND && value == NULL);
    CHECK(put(a, &key1, &v1, destructor) == CUDA_SUCCESS);
    CHECK(put(b, &key1, &v2, destructor) == CUDA_SUCCESS);
    CHECK(get(&value, a, &key1) == CUDA_SUCCESS && value == &v1);
    CHECK(get(&value, b, &key1) == CUDA_SUCCESS && value == &v2);
    CHECK(put(a, &key1, &v3, destructor) == CUDA_SUCCESS); /* replaces */
    CHECK(get(&value, a, &key1) == CUDA_SUCCESS && value == &v3);
    CHECK(put(a, &key2, &v1, NULL) == CUDA_SUCCESS);
    CHECK(remove_value(a, &key2) == CUDA_SUCCESS && get(&value, a, &key2) == CUDA_ERROR_NOT_FOUND);
    CHECK(remove_value(a, &key2) == CUDA_ERROR_NOT_FOUND);
    CHECK(get(NULL, a, &key1) == CUDA_ERROR_INVALID_VALUE);

    /* destroying a context runs its values' destructors, and only its */
    destructor_calls = 0;
    CHECK(cuCtxDestroy_v2(a) == CUDA_SUCCESS);
    CHECK(destructor_calls == 1 && destroyed_value == &v3);
    CHECK(get(&value, a, &key1) == CUDA_ERROR_NOT_FOUND);
    CHECK(get(&value, b, &key1) == CUDA_SUCCESS && value == &v2);

    /* NULL: the current context (the fake server's current one is the primary context) */
    CUcontext primary;
    CHECK(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS);
    CHECK(put(NULL, &key1, &v1, destructor) == CUDA_SUCCESS);
    CHECK(get(&value, primary, &key1) == CUDA_SUCCESS && value == &v1);

    /* a release that leaves the primary context active runs nothing; the last one runs them */
    destructor_calls = 0;
    atomic_store(&fake.primary_active, 1);
    CHECK(cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS && destructor_calls == 0);
    atomic_store(&fake.primary_active, 0);
    CHECK(cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS && destructor_calls == 1 && destroyed_value == &v1);
    CHECK(get(&value, primary, &key1) == CUDA_ERROR_NOT_FOUND);

    /* a reset runs them too; so does CUDART interface slot 2, which retains the primary context */
    const uintptr_t *cudart = table("6bd5fb6c5bf4e74a8987d93912fd9df9", &r);
    CUcontext retained = NULL;
    CHECK(((primary_fn)cudart[2])(&retained, 0) == CUDA_SUCCESS && retained == primary);

    /* slot 6, cudart 11.8's module load: slot 1 when its extras are NULL (a NULL wrapper is slot 1's
     * INVALID_VALUE, not NOT_SUPPORTED); with extras, whose meaning is unknown, refused */
    CUmodule loaded = NULL;
    int extra = 0;
    CUresult via_slot1 = ((module_fn)cudart[1])(&loaded, NULL);
    CHECK(via_slot1 == CUDA_ERROR_INVALID_VALUE);
    CHECK(((module_ext_fn)cudart[6])(&loaded, NULL, NULL, NULL, 0) == via_slot1);
    CHECK(((module_ext_fn)cudart[6])(&loaded, NULL, &extra, NULL, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(((module_ext_fn)cudart[6])(&loaded, NULL, NULL, &extra, 1) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(put(primary, &key2, &v2, destructor) == CUDA_SUCCESS);
    destructor_calls = 0;
    CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS && destructor_calls == 1 && destroyed_value == &v2);
    CHECK(cuCtxDestroy_v2(b) == CUDA_SUCCESS && destructor_calls == 2);
}

static void test_other_slots(void)
{
    CUresult r;
    const uintptr_t *hooks = table("a094798c2e742e7493f20800200c0a66", &r);
    void *buffer2 = NULL, *buffer6 = NULL;
    size_t size2 = 0, size6 = 0;
    ((hooks_fn)hooks[2])(&buffer2, &size2);
    ((hooks_fn)hooks[6])(&buffer6, &size6);
    CHECK(buffer2 != NULL && buffer6 != NULL && buffer2 != buffer6 && size2 > 0 && size6 > 0);
    CHECK(((uint8_t *)buffer2)[0] == 0 && ((uint8_t *)buffer6)[size6 - 1] == 0);

    /* tools TLS slot 2: the thread's current context, as cuCtxGetCurrent gives it */
    typedef CUresult (*tools_fn)(void **);
    const uintptr_t *tools = table("42d85a8123f6cb478298f6e78a3aecdc", &r);
    void *state = NULL;
    CUcontext current = NULL;
    CHECK(cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != NULL);
    CHECK(((tools_fn)tools[2])(&state) == CUDA_SUCCESS && state == (void *)current);
    CHECK(((tools_fn)tools[2])(NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(((unknown_fn)tools[1])() == CUDA_ERROR_NOT_SUPPORTED);

    const uintptr_t *checks = table("263e88607cd2614392f6bbd5006dfa7e", &r);
    unsigned first = 7;
    const void *second = &first;
    CHECK(((check_fn)checks[2])((CUcontext)1, &first, &second) == CUDA_SUCCESS && first == 0 && second == &first);

    const uintptr_t *integrity = table("d4082055bde6704b8d34ba123c66e1f2", &r);
    uint64_t answer[2] = {0, 0};
    CHECK(((integrity_fn)integrity[1])(13000, 1796000000, answer) == CUDA_SUCCESS);
    CHECK(answer[0] == (13000ULL * 1000003u ^ 1796000000ULL) && answer[1] == ~1796000000ULL);
}

/* 1734dc26: the server's SM topology, asked once, handed out as fresh copies that slot 13 frees */
static void test_sm_topology(void)
{
    typedef CUresult (*get_fn)(uint8_t **, uint8_t **);
    typedef CUresult (*release_fn)(void *, void *);
    CUresult r;
    const uintptr_t *t = table("1734dc26800d47458726c0f1e7dd8bca", &r);
    CHECK(r == CUDA_SUCCESS && t != NULL && t[0] == 136);
    uint8_t *first = NULL, *second = NULL, *again = NULL, *again2 = NULL;
    CHECK(((get_fn)t[4])(&first, &second) == CUDA_SUCCESS && first != NULL && second != NULL);
    CHECK(first[0] == 0 && first[1] == 1 && first[2] == 0 && second[0] == 0 && second[1] == 0 && second[2] == 1);
    CHECK(((get_fn)t[4])(&again, &again2) == CUDA_SUCCESS && again != first && again[1] == 1);
    CHECK(fake.topology_asks == 1); /* kept after the first answer */
    CHECK(((get_fn)t[4])(NULL, &again2) == CUDA_ERROR_INVALID_VALUE);
    CHECK(((release_fn)t[13])(first, second) == CUDA_SUCCESS);
    CHECK(((release_fn)t[13])(again, again2) == CUDA_SUCCESS);
    CHECK(((unknown_fn)t[1])() == CUDA_ERROR_NOT_SUPPORTED);
}

static void remember_function(void *user, CUfunction function)
{
    CUfunction *seen = user;
    seen[seen[0] != NULL] = function;
}

/* 6e163fbe slot 7: cuFFT's way to a module's one kernel — each function reported, the count answered */
static void test_cufft_module_functions(void)
{
    typedef int (*functions_fn)(CUcontext, CUmodule, void (*)(void *, CUfunction), void *);
    CUresult r;
    const uintptr_t *t = table("6e163fbeb958444d835ce182aff1991e", &r);
    CHECK(r == CUDA_SUCCESS && t != NULL && t[0] == 792);
    CUfunction seen[2] = {NULL, NULL};
    CUmodule module = (CUmodule)0x0200000100000001ULL;
    CHECK(((functions_fn)t[7])(NULL, module, remember_function, seen) == 1);
    CHECK(seen[0] == (CUfunction)FAKE_FUNCTION && seen[1] == NULL);
    CHECK(((functions_fn)t[7])(NULL, module, NULL, seen) == 0);
    CHECK(((unknown_fn)t[8])() == CUDA_ERROR_NOT_SUPPORTED);
}

int main(void)
{
    test_sizes_and_refusals();
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_context_local_storage();
    test_other_slots();
    test_sm_topology();
    test_cufft_module_functions();
    unlink(path);
    return check_summary("test_export_tables");
}
