package io.ivcuda.server.backend;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.agrona.UnsafeApi;

/**
 * The backend of a host whose libcuda.so.1 cannot be loaded (chosen by {@link JnaCudaBackend#load()}):
 * the server still runs and every driver call answers CUDA_ERROR_NO_DEVICE, so a guest sees a clean
 * error (and the server's log says why). A proxy, so that a new {@link CudaBackend} method needs
 * nothing here.
 */
public final class NoDriver implements InvocationHandler {
    private final String description;

    private NoDriver(String reason) {
        this.description = "cuda (libcuda.so.1 not loadable: " + reason + ")";
    }

    /** A backend that answers every call with CUDA_ERROR_NO_DEVICE; {@code reason} says why in describe(). */
    public static CudaBackend create(String reason) {
        return (CudaBackend) Proxy.newProxyInstance(CudaBackend.class.getClassLoader(),
                new Class<?>[] {CudaBackend.class}, new NoDriver(reason));
    }

    /** Whether {@code backend} is one of these. */
    public static boolean is(CudaBackend backend) {
        return Proxy.isProxyClass(backend.getClass()) && Proxy.getInvocationHandler(backend) instanceof NoDriver;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) {
        return switch (method.getName()) {
            case "describe", "toString" -> description;
            case "newOut" -> new Out(UnsafeApi.allocateMemory(Out.SCRATCH_SIZE));
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            // the NVML block answers nvmlReturn_t: no driver, no NVML
            default -> method.getName().startsWith("nvml") ? NvmlResult.DRIVER_NOT_LOADED : CuResult.NO_DEVICE;
        };
    }
}
