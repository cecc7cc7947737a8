package io.ivcuda.server.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The test device answers attribute numbers as the driver does: those of cuda.h, on device 0 only. */
class HostMemoryDeviceAttributeTest {

    private final HostMemoryBackend backend = new HostMemoryBackend();
    /* deviceGetAttribute sets only value: no scratch memory needed */
    private final Out out = new Out(0);

    @Test
    void everyAttributeOfCudaHIsAnswered() {
        assertEquals(CuResult.SUCCESS, backend.deviceGetAttribute(out, 1, 0), "MAX_THREADS_PER_BLOCK");
        assertEquals(CuResult.SUCCESS, backend.deviceGetAttribute(out, 147, 0), "the last attribute of CUDA 13.0");
    }

    @Test
    void numbersOutsideCudaHAreInvalidValues() {
        for (int attribute : new int[] {0, -1, HostMemoryBackend.DEVICE_ATTRIBUTE_END, 100000, Integer.MAX_VALUE}) {
            assertEquals(CuResult.INVALID_VALUE, backend.deviceGetAttribute(out, attribute, 0), "attribute " + attribute);
        }
    }

    @Test
    void otherDevicesAreInvalidDevices() {
        assertEquals(CuResult.INVALID_DEVICE, backend.deviceGetAttribute(out, 1, 1));
        assertEquals(CuResult.INVALID_DEVICE, backend.deviceGetAttribute(out, 1, -1));
    }
}
