package io.ivcuda.server.backend;

/** The nvmlReturn_t values the server answers in the NVML operations' status (numbers from nvml.h). */
public final class NvmlResult {
    public static final int SUCCESS = 0;
    public static final int UNINITIALIZED = 1;
    public static final int INVALID_ARGUMENT = 2;
    public static final int NOT_SUPPORTED = 3;
    public static final int NOT_FOUND = 6;
    public static final int INSUFFICIENT_SIZE = 7;
    public static final int DRIVER_NOT_LOADED = 9;
    public static final int LIBRARY_NOT_FOUND = 12;
    public static final int FUNCTION_NOT_FOUND = 13;
    public static final int UNKNOWN = 999;

    private NvmlResult() {
    }
}
