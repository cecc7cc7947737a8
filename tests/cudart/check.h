// Shared by the runtime-API test programs: every call is checked; a failure prints
// "FAIL <call> -> <error name>" and exits 1. Lines starting "info:" or "time:" may differ
// between a native run and one through ivcuda; every other line must be equal.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t check_error_ = (call);                                            \
        if (check_error_ != cudaSuccess) {                                            \
            std::printf("FAIL %s -> %s\n", #call, cudaGetErrorName(check_error_));    \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

#define EXPECT(condition)                                                             \
    do {                                                                              \
        if (!(condition)) {                                                           \
            std::printf("WRONG %s (line %d)\n", #condition, __LINE__);                \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

// A call that must fail with `expected`; the error must not stick.
#define CHECK_FAILS(call, expected)                                                   \
    do {                                                                              \
        cudaError_t check_error_ = (call);                                            \
        if (check_error_ != (expected)) {                                             \
            std::printf("WRONG %s -> %s, expected %s\n", #call,                      \
                        cudaGetErrorName(check_error_), cudaGetErrorName(expected));  \
            std::exit(1);                                                             \
        }                                                                             \
        cudaGetLastError(); /* takes the error back */                               \
        CHECK(cudaGetLastError()); /* and it did not stick */                         \
    } while (0)
