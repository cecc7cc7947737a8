/* The linker (cuLink*): the link state lives in the server's driver. Inputs travel through the
 * window (files are read here); cuLinkComplete's image comes back into a buffer the guest owns
 * until cuLinkDestroy, as the driver's does. JIT options: scalar ones travel; the info and error
 * logs and the wall time come back after each call of the state (jit_logs.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "jit_logs.h"
#include "log.h"
#include "module.h"

#define MAX_LINK_INPUT (1ULL << 31)

/* The completed image of each link state, freed by cuLinkDestroy. */
struct output {
    struct output *next;
    CUlinkState state;
    void *image;
};

static pthread_mutex_t outputs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct output *outputs;

static void keep_output(CUlinkState state, void *image)
{
    struct output *o = malloc(sizeof *o);
    if (o == NULL)
        return; /* cannot happen in practice; the image then stays allocated */
    o->state = state;
    o->image = image;
    pthread_mutex_lock(&outputs_lock);
    o->next = outputs;
    outputs = o;
    pthread_mutex_unlock(&outputs_lock);
}

static void free_outputs(CUlinkState state)
{
    pthread_mutex_lock(&outputs_lock);
    for (struct output **p = &outputs; *p != NULL;) {
        struct output *o = *p;
        if (o->state == state) {
            *p = o->next;
            free(o->image);
            free(o);
        } else {
            p = &o->next;
        }
    }
    pthread_mutex_unlock(&outputs_lock);
}

IVC_EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                    CUlinkState *stateOut)
{
    if (stateOut == NULL)
        return ivc_null_argument("cuLinkCreate", "stateOut");
    uint64_t jit[2 * IVC_MAX_JIT_OPTIONS];
    size_t pairs = 0;
    /* read before ivc_jit_pairs answers the outputs empty in the program's arrays */
    struct ivc_jit_logs logs;
    int asked = ivc_jit_logs_scan(&logs, numOptions, options, optionValues);
    CUresult r = ivc_jit_pairs(jit, &pairs, numOptions, options, optionValues);
    if (r != CUDA_SUCCESS)
        return r;
    ivc_jit_logs_pairs(&logs, jit, &pairs, IVC_MAX_JIT_OPTIONS);
    r = ivc_link_create(stateOut, jit, pairs * 16);
    if (r == CUDA_SUCCESS && asked)
        ivc_jit_logs_keep(*stateOut, &logs, optionValues);
    return r;
}
IVC_ALIASES_cuLinkCreate_v2

static CUresult add(CUlinkState state, CUjitInputType type, const void *data, size_t size, const char *name,
                    unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    if (data == NULL || size == 0 || size > MAX_LINK_INPUT)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t jit[2 * IVC_MAX_JIT_OPTIONS];
    size_t pairs = 0;
    CUresult r = ivc_jit_pairs(jit, &pairs, numOptions, options, optionValues);
    if (r != CUDA_SUCCESS)
        return r;
    struct ivc_call call;
    r = ivc_begin(&call, IVC_OP_ivc_link_add_data, "ivc_link_add_data");
    if (r != CUDA_SUCCESS)
        return r;
    ivc_put_u64(&call, (uint64_t)(uintptr_t)state);
    ivc_put_u64(&call, (uint64_t)(int64_t)type);
    ivc_put_u64(&call, size);
    ivc_put_str(&call, name != NULL ? name : "");
    ivc_put_buf(&call, jit, pairs * 16);
    ivc_put_u64(&call, pairs * 16);
    r = ivc_publish(&call);
    if (r == CUDA_SUCCESS)
        r = ivc_stream_to_server(&call, data, size);
    if (r == CUDA_SUCCESS)
        r = ivc_await(&call);
    if (ivc_response(&call))
        r = ivc_finish(&call, r);
    ivc_jit_logs_update(state); /* a failed input's errors are in the error log */
    return r;
}

IVC_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
                                     unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    return add(state, type, data, size, name, numOptions, options, optionValues);
}
IVC_ALIASES_cuLinkAddData_v2

IVC_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
                                     CUjit_option *options, void **optionValues)
{
    if (path == NULL)
        return ivc_null_argument("cuLinkAddFile", "path");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ivc_log("cuLinkAddFile: cannot open %s", path);
        return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
    }
    struct stat st;
    CUresult r = CUDA_SUCCESS;
    char *data = NULL;
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0 || (unsigned long long)st.st_size > MAX_LINK_INPUT)
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((data = malloc((size_t)st.st_size + 1)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        r = 301;
    fclose(f);
    if (r == CUDA_SUCCESS) {
        data[st.st_size] = 0; /* PTX is text: the driver reads it as a C string */
        /* the file's name, as the driver names a file input in its logs */
        r = add(state, type, data, (size_t)st.st_size + 1, path, numOptions, options, optionValues);
    }
    free(data);
    return r;
}
IVC_ALIASES_cuLinkAddFile_v2

IVC_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    if (cubinOut == NULL || sizeOut == NULL)
        return ivc_null_argument("cuLinkComplete", cubinOut == NULL ? "cubinOut" : "sizeOut");
    size_t size = 0;
    CUresult r = ivc_link_complete(&size, state);
    ivc_jit_logs_update(state);
    if (r != CUDA_SUCCESS)
        return r;
    if (size == 0 || size > MAX_LINK_INPUT)
        return CUDA_ERROR_UNKNOWN;
    void *image = malloc(size);
    if (image == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct ivc_call call;
    r = ivc_begin(&call, IVC_OP_ivc_link_read, "ivc_link_read");
    if (r == CUDA_SUCCESS) {
        ivc_put_u64(&call, (uint64_t)(uintptr_t)state);
        ivc_put_u64(&call, size);
        r = ivc_publish(&call);
        if (r == CUDA_SUCCESS)
            r = ivc_stream_from_server(&call, image, size);
        if (r == CUDA_SUCCESS)
            r = ivc_await(&call);
        if (ivc_response(&call))
            r = ivc_finish(&call, r);
    }
    if (r != CUDA_SUCCESS) {
        free(image);
        return r;
    }
    free_outputs(state); /* a second complete replaces the first image */
    keep_output(state, image);
    *cubinOut = image;
    *sizeOut = size;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuLinkComplete

IVC_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
    CUresult r = ivc_link_destroy(state);
    if (r == CUDA_SUCCESS) {
        free_outputs(state);
        ivc_jit_logs_forget(state);
    }
    return r;
}
IVC_ALIASES_cuLinkDestroy
