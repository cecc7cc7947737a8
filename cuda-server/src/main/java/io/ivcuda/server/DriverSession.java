package io.ivcuda.server;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HostGpu;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.HeaderFlyweight;
import java.util.Locale;
import java.util.function.Consumer;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The server's own use of the driver: cuInit, the driver's version, the configured GPU (a device
 * index, or a UUID matched against every device's), its primary context (retained for the
 * server's lifetime) and the region registered with it (pool copies are then DMA). Failures are
 * logged and become what the guest's cuInit answers. {@link #close()} undoes it, last.
 */
final class DriverSession implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(DriverSession.class);
    private static final int CU_MEMHOSTREGISTER_PORTABLE = 1;
    private static final int CU_MEMHOSTREGISTER_DEVICEMAP = 2;

    private final CudaBackend backend;
    private final Region region;
    private int initResult = CuResult.NOT_INITIALIZED;
    private int driverVersion;
    private int nativeDevice;
    private long poolDevicePointer;
    private boolean primaryRetained;
    private boolean registered;

    private DriverSession(CudaBackend backend, Region region) {
        this.backend = backend;
        this.region = region;
    }

    /**
     * Opens the driver for the GPU {@code gpu} (index or {@code GPU-…} UUID).
     *
     * @param poolOffset where the region's pool starts
     * @param message    where to say why guests cannot use the GPU (the header's server_message)
     */
    static DriverSession open(CudaBackend backend, Region region, long poolOffset, String gpu, Consumer<String> message) {
        DriverSession session = new DriverSession(backend, region);
        Out out = backend.newOut();
        try {
            session.open(out, poolOffset, gpu, message);
        } finally {
            out.free();
        }
        return session;
    }

    private void open(Out out, long poolOffset, String gpu, Consumer<String> message) {
        int result = backend.init(0);
        initResult = result;
        if (result != CuResult.SUCCESS) {
            LOG.error("cuInit on the host failed: {} — guests get this error from cuInit", CuResult.name(result));
            message.accept("host cuInit failed: " + CuResult.name(result));
            return;
        }
        if (backend.driverGetVersion(out) == CuResult.SUCCESS) {
            driverVersion = out.value;
        }
        int ordinal = ordinalOf(backend, gpu, out);
        if (ordinal < 0) {
            LOG.error("gpu = {}: no such device index or UUID on this host — guests get CUDA_ERROR_NO_DEVICE", gpu);
            initResult = CuResult.NO_DEVICE;
            return;
        }
        result = backend.deviceGet(out, ordinal);
        if (result != CuResult.SUCCESS) {
            LOG.error("gpu = {}: cuDeviceGet failed: {} — guests get CUDA_ERROR_NO_DEVICE", ordinal, CuResult.name(result));
            initResult = CuResult.NO_DEVICE;
            return;
        }
        nativeDevice = out.value;
        // the region is registered once the primary context exists; pool copies are then DMA
        result = backend.primaryCtxRetain(out, nativeDevice);
        // under MPS the first context may be refused while MPS recovers from a client's fatal fault
        long deadline = System.nanoTime() + Main.MPS_WAIT_MS * 1_000_000;
        while (Main.mpsNotReady(result) && System.nanoTime() - deadline < 0) {
            LOG.warn("primary context of gpu {}: CUresult {} (MPS not ready); retrying", ordinal, result);
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            result = backend.primaryCtxRetain(out, nativeDevice);
        }
        if (result != CuResult.SUCCESS) {
            LOG.warn("primary context of gpu {} not available: the pool is not registered", ordinal);
            return;
        }
        primaryRetained = true;
        backend.ctxSetCurrent(out.handle);
        result = backend.memHostRegister(region.address(), region.size(),
                CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
        if (result != CuResult.SUCCESS) {
            LOG.warn("cuMemHostRegister of the region failed ({}): pool copies are staged by the driver",
                    CuResult.name(result));
            return;
        }
        registered = true;
        if (backend.memHostGetDevicePointer(out, region.address() + poolOffset) == CuResult.SUCCESS) {
            poolDevicePointer = out.address;
        }
    }

    /** A device index, or the index of the device whose UUID is {@code GPU-xxxxxxxx-xxxx-...}; -1 if none. */
    static int ordinalOf(CudaBackend backend, String gpu, Out out) {
        try {
            return Integer.parseInt(gpu);
        } catch (NumberFormatException notAnIndex) {
            String wanted = gpu.toLowerCase(Locale.ROOT).replace("gpu-", "").replace("-", "");
            if (backend.deviceGetCount(out) != CuResult.SUCCESS) {
                return -1;
            }
            int count = out.value;
            for (int i = 0; i < count; i++) {
                if (backend.deviceGet(out, i) != CuResult.SUCCESS
                        || backend.deviceGetUuid(out.scratch, out.value) != CuResult.SUCCESS) {
                    continue;
                }
                StringBuilder hex = new StringBuilder();
                for (int b = 0; b < 16; b++) {
                    hex.append(String.format("%02x", UnsafeApi.getByte(out.scratch + b) & 0xff));
                }
                if (hex.toString().equals(wanted)) {
                    return i;
                }
            }
            return -1;
        }
    }

    /** What the VM's handlers need of it. */
    HostGpu gpu() {
        return new HostGpu(initResult, driverVersion, nativeDevice, poolDevicePointer);
    }

    /** The header's feature bit this session earns: POOL_REGISTERED when the pool is DMA-able. */
    long features() {
        return registered ? HeaderFlyweight.FEATURE_POOL_REGISTERED : 0;
    }

    @Override
    public void close() {
        if (registered) {
            backend.memHostUnregister(region.address());
            registered = false;
        }
        if (primaryRetained) {
            backend.primaryCtxRelease(nativeDevice);
            primaryRetained = false;
        }
    }
}
