/* unload_check <library> [rounds]: what cudart does after a failed initialisation, many
 * times over — dlopen libcuda.so.1, make calls that claim a channel (the heartbeat thread
 * starts), dlclose it, then outlive a heartbeat period. A library unmapped under its own
 * running thread dies here with SIGSEGV; ours must stay loaded (-z nodelete).
 * Prints "ok" when every round survived and the library was still mapped after dlclose. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int *);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: unload_check <libcuda.so.1> [rounds]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 4;
    for (int i = 0; i < rounds; i++) {
        void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) {
            fprintf(stderr, "unload_check: %s\n", dlerror());
            return 1;
        }
        init_fn init = (init_fn)dlsym(library, "cuInit");
        count_fn count = (count_fn)dlsym(library, "cuDeviceGetCount");
        int devices = -1;
        if (init == NULL || count == NULL || init(0) != 0 || count(&devices) != 0) {
            fprintf(stderr, "unload_check: round %d: cuInit/cuDeviceGetCount failed\n", i);
            return 1;
        }
        dlclose(library);
        if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) == NULL) {
            fprintf(stderr, "unload_check: round %d: dlclose unmapped the library (it runs threads)\n", i);
            return 1;
        }
        dlclose(library); /* the RTLD_NOLOAD reference */
        /* longer than the heartbeat period (250 ms): an unmapped heartbeat would fault now */
        struct timespec pause = {0, 300000000L};
        nanosleep(&pause, NULL);
    }
    printf("ok\n");
    return 0;
}
