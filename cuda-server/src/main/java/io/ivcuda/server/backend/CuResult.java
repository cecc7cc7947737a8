package io.ivcuda.server.backend;

/** The CUresult values the server answers (numbers from cuda.h). */
public final class CuResult {
    public static final int SUCCESS = 0;
    public static final int INVALID_VALUE = 1;
    public static final int OUT_OF_MEMORY = 2;
    public static final int NOT_INITIALIZED = 3;
    public static final int DEINITIALIZED = 4;
    public static final int DEVICE_UNAVAILABLE = 46;
    public static final int NO_DEVICE = 100;
    public static final int INVALID_DEVICE = 101;
    public static final int INVALID_IMAGE = 200;
    public static final int INVALID_CONTEXT = 201;
    public static final int INVALID_HANDLE = 400;
    public static final int ILLEGAL_STATE = 401;
    public static final int NOT_FOUND = 500;
    public static final int NOT_READY = 600;
    public static final int HOST_MEMORY_ALREADY_REGISTERED = 712;
    public static final int HOST_MEMORY_NOT_REGISTERED = 713;
    public static final int NOT_SUPPORTED = 801;
    public static final int UNKNOWN = 999;

    private CuResult() {
    }

    public static String name(int result) {
        return switch (result) {
            case SUCCESS -> "CUDA_SUCCESS";
            case INVALID_VALUE -> "CUDA_ERROR_INVALID_VALUE";
            case OUT_OF_MEMORY -> "CUDA_ERROR_OUT_OF_MEMORY";
            case NOT_INITIALIZED -> "CUDA_ERROR_NOT_INITIALIZED";
            case DEINITIALIZED -> "CUDA_ERROR_DEINITIALIZED";
            case DEVICE_UNAVAILABLE -> "CUDA_ERROR_DEVICE_UNAVAILABLE";
            case NO_DEVICE -> "CUDA_ERROR_NO_DEVICE";
            case INVALID_DEVICE -> "CUDA_ERROR_INVALID_DEVICE";
            case INVALID_IMAGE -> "CUDA_ERROR_INVALID_IMAGE";
            case INVALID_CONTEXT -> "CUDA_ERROR_INVALID_CONTEXT";
            case INVALID_HANDLE -> "CUDA_ERROR_INVALID_HANDLE";
            case ILLEGAL_STATE -> "CUDA_ERROR_ILLEGAL_STATE";
            case NOT_FOUND -> "CUDA_ERROR_NOT_FOUND";
            case NOT_READY -> "CUDA_ERROR_NOT_READY";
            case HOST_MEMORY_ALREADY_REGISTERED -> "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
            case HOST_MEMORY_NOT_REGISTERED -> "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
            case NOT_SUPPORTED -> "CUDA_ERROR_NOT_SUPPORTED";
            default -> "CUresult " + result;
        };
    }
}
