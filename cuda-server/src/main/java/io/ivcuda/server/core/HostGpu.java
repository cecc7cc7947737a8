package io.ivcuda.server.core;

/**
 * The host GPU a VM uses, as the server's driver session found it at start.
 *
 * @param initResult        the host's cuInit result (CUDA_ERROR_NO_DEVICE too when the configured GPU is
 *                          missing), answered to the guest's cuInit
 * @param driverVersion     the host's cuDriverGetVersion, 0 without a driver
 * @param nativeDevice      the host's CUdevice of the configured GPU
 * @param poolDevicePointer the device address of the region's pool, 0 when the region is not registered
 */
public record HostGpu(int initResult, int driverVersion, int nativeDevice, long poolDevicePointer) {
}
