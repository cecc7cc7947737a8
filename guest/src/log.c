/* How the library speaks: one-line stderr messages that start with "ivcuda:" and the
 * IVCUDA_DEBUG call trace. Every unit uses them and they use nothing of the library, so
 * any unit may report from anywhere without a loop. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

void ivc_log(const char *format, ...)
{
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    /* One write per line, so lines of concurrent threads do not interleave. */
    fprintf(stderr, "ivcuda: %s\n", line);
}

int ivc_debug(void)
{
    static int state = -1;
    if (state < 0) {
        const char *value = getenv("IVCUDA_DEBUG");
        state = value != NULL && value[0] != '\0' && value[0] != '0';
    }
    return state;
}

void ivc_trace(const char *format, ...)
{
    if (!ivc_debug())
        return;
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    fprintf(stderr, "ivcuda[%d:%d] %s\n", (int)getpid(), (int)gettid(), line);
}
