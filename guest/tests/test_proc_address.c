/* cuGetProcAddress of the built libcuda.so.1 (dlopened, so that the exported function and
 * the exported symbols are what is tested):
 *  - every (symbol, version, flags) lookup real programs made (the lookup files in api/reference/,
 *    GPA lines: cudart, cuBLAS, cuBLASLt, cuDNN, PyTorch) answers the result the real driver
 *    answered and the variant CUDA's cudaTypedefs.h names, as api/driver-proc-addresses.txt
 *    records it (resolved here by this test's own reading of the file);
 *  - every driver name they took with dlsym (DLS lines) is there;
 *  - unknown names, versions before a function existed and versions newer than the library
 *    answer as the CUDA 13 driver API reference says. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ivc_api.h"
#include "ivc_internal.h"

#define API_DIR "../api"

typedef CUresult (*get_proc_address_v2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_address_v1)(const char *, void **, int, cuuint64_t);

struct row {
    char base[128];
    int version;
    int per_thread;
    char symbol[128];
};

static struct row *rows;
static size_t row_count;

static void load_rows(void)
{
    FILE *f = fopen(API_DIR "/driver-proc-addresses.txt", "r");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    char line[512];
    size_t capacity = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (row_count == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            rows = realloc(rows, capacity * sizeof *rows);
        }
        struct row *r = &rows[row_count];
        char stream[16];
        if (sscanf(line, "%127s %d %15s %127s", r->base, &r->version, stream, r->symbol) == 4) {
            r->per_thread = strcmp(stream, "-") != 0;
            row_count++;
        }
    }
    fclose(f);
}

/* The rule of the data file's header, read independently of the library's implementation. */
static const char *expected_symbol(const char *base, int version, int flags)
{
    const char *legacy = NULL, *per_thread = NULL;
    int legacy_version = -1, per_thread_version = -1;
    for (size_t i = 0; i < row_count; i++) {
        const struct row *r = &rows[i];
        if (strcmp(r->base, base) != 0 || r->version > version)
            continue;
        if (r->per_thread && r->version > per_thread_version) {
            per_thread = r->symbol;
            per_thread_version = r->version;
        } else if (!r->per_thread && r->version > legacy_version) {
            legacy = r->symbol;
            legacy_version = r->version;
        }
    }
    return (flags & 2) && per_thread != NULL ? per_thread : legacy;
}

static int lookups_checked, dlsyms_checked;

static void check_reference(void *library, const char *file)
{
    get_proc_address_v2 gpa = (get_proc_address_v2)dlsym(library, "cuGetProcAddress_v2");
    char path[256];
    snprintf(path, sizeof path, API_DIR "/reference/%s", file);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL && gpa != NULL);
    if (f == NULL || gpa == NULL)
        return;
    char line[512];
    int failures = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char caller[128], symbol[128] = "";
        int version, flags, result;
        if (strncmp(line, "GPA ", 4) == 0) {
            /* "GPA caller symbol version flags result -9"; the symbol may be empty (two spaces) */
            char *p = line + 4;
            char *space = strchr(p, ' ');
            if (space == NULL)
                continue;
            snprintf(caller, sizeof caller, "%.*s", (int)(space - p), p);
            p = space + 1;
            space = strchr(p, ' ');
            if (space == NULL)
                continue;
            snprintf(symbol, sizeof symbol, "%.*s", (int)(space - p), p);
            if (sscanf(space + 1, "%d %d %d", &version, &flags, &result) != 3)
                continue;
            void *pfn = (void *)1;
            CUdriverProcAddressQueryResult status = 99;
            CUresult r = gpa(symbol, &pfn, version, (cuuint64_t)flags, &status);
            const char *want = symbol[0] ? expected_symbol(symbol, version, flags) : NULL;
            void *want_address = want ? dlsym(library, want) : NULL;
            int good = r == result && pfn == want_address
                       && status == (want ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
                       && (symbol[0] == '\0' || want_address != NULL);
            CHECK(good);
            if (!good && failures++ < 10) {
                Dl_info info = {0};
                dladdr(pfn, &info);
                fprintf(stderr, "  %s: %s %s %d %d -> %d %s (status %d), expected %d %s\n", file, caller, symbol,
                        version, flags, r, info.dli_sname ? info.dli_sname : "?", (int)status, result,
                        want ? want : "(none)");
            }
            lookups_checked++;
        } else if (strncmp(line, "DLS ", 4) == 0 && sscanf(line + 4, "%127s %127s", caller, symbol) == 2
                   && strncmp(symbol, "cu", 2) == 0 && symbol[2] >= 'A' && symbol[2] <= 'Z') {
            /* driver names only: the file also records cuDNN taking cublasLt* and its own cudnn* */
            int found = dlsym(library, symbol) != NULL;
            CHECK(found);
            if (!found)
                fprintf(stderr, "  %s: %s takes %s with dlsym: missing\n", file, caller, symbol);
            dlsyms_checked++;
        }
    }
    fclose(f);
}

static void check_rules(void *library)
{
    get_proc_address_v2 gpa = (get_proc_address_v2)dlsym(library, "cuGetProcAddress_v2");
    get_proc_address_v1 gpa1 = (get_proc_address_v1)dlsym(library, "cuGetProcAddress");
    void *pfn;
    CUdriverProcAddressQueryResult status;
#define LOOKUP(name, version, flags) (pfn = (void *)1, status = 99, gpa(name, &pfn, version, flags, &status))
    CHECK(LOOKUP("cuCtxCreate", 3020, 0) == 0 && pfn == dlsym(library, "cuCtxCreate_v2") && status == 0);
    CHECK(LOOKUP("cuCtxCreate", 11040, 0) == 0 && pfn == dlsym(library, "cuCtxCreate_v3"));
    CHECK(LOOKUP("cuCtxCreate", 13000, 0) == 0 && pfn == dlsym(library, "cuCtxCreate_v4"));
    CHECK(LOOKUP("cuMemcpyHtoD", 13000, 2) == 0 && pfn == dlsym(library, "cuMemcpyHtoD_v2_ptds"));
    CHECK(LOOKUP("cuMemcpyHtoD", 13000, 1) == 0 && pfn == dlsym(library, "cuMemcpyHtoD_v2")); /* legacy */
    CHECK(LOOKUP("cuMemcpyHtoD", 6050, 2) == 0 && pfn == dlsym(library, "cuMemcpyHtoD_v2")); /* before 7.0 */
    CHECK(LOOKUP("cuDeviceGet", 13000, 2) == 0 && pfn == dlsym(library, "cuDeviceGet")); /* no variant */
    CHECK(LOOKUP("cuStreamGetCaptureInfo", 12030, 2) == 0 && pfn == dlsym(library, "cuStreamGetCaptureInfo_v3_ptsz"));
    CHECK(LOOKUP("cuGetProcAddress", 11030, 0) == 0 && pfn == dlsym(library, "cuGetProcAddress"));
    CHECK(LOOKUP("cuGetProcAddress", 12000, 0) == 0 && pfn == dlsym(library, "cuGetProcAddress_v2"));
    /* not found and too old: success, NULL, the reason in symbolStatus */
    CHECK(LOOKUP("cuNoSuchThing", 13000, 0) == 0 && pfn == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(LOOKUP("cuGetProcAddress", 11000, 0) == 0 && pfn == NULL
          && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK(LOOKUP("", 0, 0) == 0 && pfn == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* newer than the library's CUDA version */
    CHECK(LOOKUP("cuInit", IVC_API_VERSION + 10, 0) == CUDA_ERROR_INVALID_VALUE && pfn == NULL);
    CHECK(LOOKUP("cuInit", IVC_API_VERSION, 0) == 0 && pfn == dlsym(library, "cuInit"));
    CHECK(gpa(NULL, &pfn, 2000, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(gpa("cuInit", NULL, 2000, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(gpa("cuInit", &pfn, 2000, 0, NULL) == 0 && pfn == dlsym(library, "cuInit"));
    CHECK(gpa1("cuInit", &pfn, 2000, 0) == 0 && pfn == dlsym(library, "cuInit"));
    CHECK(gpa1("cuNoSuchThing", &pfn, 2000, 0) == 0 && pfn == NULL);
#undef LOOKUP
    /* a name nothing implements (OpenGL interop: no display in the VM): a stub that says
     * NOT_SUPPORTED (once on stderr) */
    CUresult (*stub)(void) = (CUresult(*)(void))dlsym(library, "cuGLCtxCreate_v2");
    CHECK(stub != NULL && stub() == CUDA_ERROR_NOT_SUPPORTED && stub() == CUDA_ERROR_NOT_SUPPORTED);
}

int main(int argc, char **argv)
{
    void *library = dlopen(argc > 1 ? argv[1] : "target/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(library != NULL);
    if (library == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return check_summary("test_proc_address");
    }
    load_rows();
    CHECK(row_count > 600);
    check_rules(library);
    check_reference(library, "cudart13-vectoradd-lookups.txt");
    check_reference(library, "pytorch-2.11-lookups.txt");
    printf("test_proc_address: %d reference lookups and %d dlsyms checked\n", lookups_checked, dlsyms_checked);
    CHECK(lookups_checked > 2500 && dlsyms_checked > 100);
    return check_summary("test_proc_address");
}
