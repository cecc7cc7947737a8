/* fake_serve <region-file>: the test server as a process, so that programs linked with
 * -lcuda can be run against it (make check runs tests/programs this way). */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "fake_server.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fake_serve <region-file>\n");
        return 2;
    }
    fake_server_start(argv[1]);
    printf("serving %s\n", argv[1]);
    fflush(stdout);
    for (;;)
        pause();
}
