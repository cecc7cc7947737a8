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
    public static final int ILLEGAL_ADDRESS = 700;
    public static final int LAUNCH_TIMEOUT = 702;
    public static final int ASSERT = 710;
    public static final int HOST_MEMORY_ALREADY_REGISTERED = 712;
    public static final int HOST_MEMORY_NOT_REGISTERED = 713;
    public static final int HARDWARE_STACK_ERROR = 714;
    public static final int ILLEGAL_INSTRUCTION = 715;
    public static final int MISALIGNED_ADDRESS = 716;
    public static final int INVALID_ADDRESS_SPACE = 717;
    public static final int INVALID_PC = 718;
    public static final int LAUNCH_FAILED = 719;
    public static final int NOT_SUPPORTED = 801;
    public static final int SYSTEM_NOT_READY = 802;
    public static final int MPS_CLIENT_TERMINATED = 810;
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
            case ILLEGAL_ADDRESS -> "CUDA_ERROR_ILLEGAL_ADDRESS";
            case LAUNCH_TIMEOUT -> "CUDA_ERROR_LAUNCH_TIMEOUT";
            case ASSERT -> "CUDA_ERROR_ASSERT";
            case HOST_MEMORY_ALREADY_REGISTERED -> "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
            case HOST_MEMORY_NOT_REGISTERED -> "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
            case HARDWARE_STACK_ERROR -> "CUDA_ERROR_HARDWARE_STACK_ERROR";
            case ILLEGAL_INSTRUCTION -> "CUDA_ERROR_ILLEGAL_INSTRUCTION";
            case MISALIGNED_ADDRESS -> "CUDA_ERROR_MISALIGNED_ADDRESS";
            case INVALID_ADDRESS_SPACE -> "CUDA_ERROR_INVALID_ADDRESS_SPACE";
            case INVALID_PC -> "CUDA_ERROR_INVALID_PC";
            case LAUNCH_FAILED -> "CUDA_ERROR_LAUNCH_FAILED";
            case NOT_SUPPORTED -> "CUDA_ERROR_NOT_SUPPORTED";
            case SYSTEM_NOT_READY -> "CUDA_ERROR_SYSTEM_NOT_READY";
            case MPS_CLIENT_TERMINATED -> "CUDA_ERROR_MPS_CLIENT_TERMINATED";
            default -> "CUresult " + result;
        };
    }
}
