/* Statistics for the benchmark programs; results are JSON objects, one a line. */
#ifndef IVCUDA_BENCH_UTIL_H
#define IVCUDA_BENCH_UTIL_H

#include "common.h"

static inline int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place; p in [0, 100]. */
static inline double percentile(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, compare_double);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static inline double mean(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s / (double)n;
}

#endif
