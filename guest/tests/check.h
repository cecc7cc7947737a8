/* Plain C checks: each CHECK counts; the summary line is "N passed, M failed". */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int checks_passed, checks_failed;

#define CHECK(condition)                                                              \
    do {                                                                              \
        if (condition) {                                                              \
            checks_passed++;                                                          \
        } else {                                                                      \
            checks_failed++;                                                          \
            fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #condition);    \
        }                                                                             \
    } while (0)

static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}

#endif
