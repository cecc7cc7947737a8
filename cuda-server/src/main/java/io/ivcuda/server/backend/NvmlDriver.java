package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The host's NVML (libnvidia-ml.so.1, shipped with the driver) through JNA direct mapping, for the
 * guest's NVML (docs/sharing.md). Registered on first use, apart from {@link CudaDriver}: a host
 * without NVML loses only the NVML answers. Pointers are the caller's native memory.
 */
final class NvmlDriver {
    static {
        Native.register(NvmlDriver.class, NativeLibrary.getInstance("libnvidia-ml.so.1"));
    }

    private NvmlDriver() {
    }

    static native int nvmlInit_v2();
    static native int nvmlDeviceGetHandleByPciBusId_v2(String pciBusId, long pdevice);
    static native int nvmlSystemGetDriverVersion(long version, int length);
    static native int nvmlSystemGetNVMLVersion(long version, int length);
    static native int nvmlSystemGetCudaDriverVersion_v2(long pversion);
    static native int nvmlDeviceGetName(long device, long name, int length);
    static native int nvmlDeviceGetUUID(long device, long uuid, int length);
    static native int nvmlDeviceGetPciInfo_v3(long device, long pci);
    static native int nvmlDeviceGetTemperature(long device, int sensor, long ptemp);
    static native int nvmlDeviceGetPowerUsage(long device, long ppower);
    static native int nvmlDeviceGetClockInfo(long device, int type, long pclock);
    static native int nvmlDeviceGetMaxClockInfo(long device, int type, long pclock);
    static native int nvmlDeviceGetUtilizationRates(long device, long putil);
    static native int nvmlDeviceGetCudaComputeCapability(long device, long pmajor, long pminor);
    static native int nvmlDeviceGetMinorNumber(long device, long pminor);
    static native int nvmlDeviceGetComputeMode(long device, long pmode);
    static native int nvmlDeviceGetPersistenceMode(long device, long pmode);
    static native int nvmlDeviceGetMemoryInfo(long device, long pmemory);
}
