package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The driver's tensor-map encoders (CUDA 12.0; cuTensorMapEncodeIm2colWide 12.8), registered on
 * first use apart from {@link CudaDriver}: a host driver without them disables tensor maps alone
 * (the calls answer CUDA_ERROR_NOT_SUPPORTED, said once in the log), never the server.
 */
final class CudaDriverTensorMaps {
    private static final Logger LOG = LogManager.getLogger(CudaDriverTensorMaps.class);
    private static final boolean AVAILABLE = register(CudaDriverTensorMaps.class, "cuTensorMapEncodeTiled, "
            + "cuTensorMapEncodeIm2col or cuTensorMapReplaceAddress (CUDA 12.0)");

    private CudaDriverTensorMaps() {
    }

    /** Registers {@code natives}' methods with libcuda.so.1; false (logged) when the driver lacks one. */
    private static boolean register(Class<?> natives, String what) {
        try {
            Native.register(natives, NativeLibrary.getInstance("libcuda.so.1"));
            return true;
        } catch (Throwable e) {
            LOG.error("libcuda.so.1 lacks {} ({}): those tensor-map calls answer CUDA_ERROR_NOT_SUPPORTED", what,
                    e.toString());
            return false;
        }
    }

    static boolean available() {
        return AVAILABLE;
    }

    static native int cuTensorMapEncodeTiled(long tensorMap, int dataType, int rank, long globalAddress,
                                             long globalDim, long globalStrides, long boxDim, long elementStrides,
                                             int interleave, int swizzle, int l2Promotion, int oobFill);

    static native int cuTensorMapEncodeIm2col(long tensorMap, int dataType, int rank, long globalAddress,
                                              long globalDim, long globalStrides, long lowerCorner, long upperCorner,
                                              int channelsPerPixel, int pixelsPerColumn, long elementStrides,
                                              int interleave, int swizzle, int l2Promotion, int oobFill);

    static native int cuTensorMapReplaceAddress(long tensorMap, long globalAddress);

    /** cuTensorMapEncodeIm2colWide, which drivers before CUDA 12.8 lack. */
    static final class Wide {
        private static final boolean AVAILABLE = register(Wide.class, "cuTensorMapEncodeIm2colWide (CUDA 12.8)");

        private Wide() {
        }

        static boolean available() {
            return AVAILABLE;
        }

        static native int cuTensorMapEncodeIm2colWide(long tensorMap, int dataType, int rank, long globalAddress,
                                                      long globalDim, long globalStrides, int lowerCornerWidth,
                                                      int upperCornerWidth, int channelsPerPixel, int pixelsPerColumn,
                                                      long elementStrides, int interleave, int mode, int swizzle,
                                                      int l2Promotion, int oobFill);
    }
}
