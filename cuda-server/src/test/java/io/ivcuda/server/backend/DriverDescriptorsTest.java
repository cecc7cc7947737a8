package io.ivcuda.server.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * The native descriptors JnaCudaBackend builds for the driver (issue 13): each is owned by one call
 * and freed when it returns, so a channel's worker thread that ends leaves nothing behind.
 */
class DriverDescriptorsTest {
    @Test
    void workersThatEndLeaveNoDescriptorBehind() throws Exception {
        long before = NativeStruct.live();
        AtomicInteger checked = new AtomicInteger();
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < 8; w++) {
            long base = 0x1000L * (w + 1);
            Thread t = new Thread(() -> {
                for (int i = 0; i < 100; i++) {
                    int r = Memcpy3D.call(CudaBackend.MEMORYTYPE_DEVICE, base, 0, 0, 0, 512, 4,
                            CudaBackend.MEMORYTYPE_HOST, base + 8, 0, 0, 0, 256, 2, 128, 2, 3, p -> {
                                // the driver's view of the struct: cuda.h's offsets
                                assertEquals(CudaBackend.MEMORYTYPE_HOST, UnsafeApi.getInt(p + Memcpy3D.SRC_MEMORY_TYPE));
                                assertEquals(base + 8, UnsafeApi.getLong(p + Memcpy3D.SRC_HOST));
                                assertEquals(256, UnsafeApi.getLong(p + Memcpy3D.SRC_PITCH));
                                assertEquals(CudaBackend.MEMORYTYPE_DEVICE, UnsafeApi.getInt(p + Memcpy3D.DST_MEMORY_TYPE));
                                assertEquals(base, UnsafeApi.getLong(p + Memcpy3D.DST_DEVICE));
                                assertEquals(0, UnsafeApi.getLong(p + Memcpy3D.DST_HOST));
                                assertEquals(512, UnsafeApi.getLong(p + Memcpy3D.DST_PITCH));
                                assertEquals(4, UnsafeApi.getLong(p + Memcpy3D.DST_HEIGHT));
                                assertEquals(3, UnsafeApi.getLong(p + Memcpy3D.DEPTH));
                                checked.incrementAndGet();
                                return CuResult.SUCCESS;
                            });
                    assertEquals(CuResult.SUCCESS, r);
                }
            });
            workers.add(t);
            t.start();
        }
        for (Thread t : workers) {
            t.join();
        }
        assertEquals(800, checked.get());
        assertEquals(before, NativeStruct.live(), "descriptor blocks still allocated after the workers ended");
    }

    @Test
    void anArraySideTakesItsOriginAndTheDescriptorIsFreedWhenTheCallThrows() {
        long before = NativeStruct.live();
        assertThrows(IllegalStateException.class, () -> Memcpy3D.call(CudaBackend.MEMORYTYPE_ARRAY, 0xabcL, 16, 2, 1,
                0, 0, CudaBackend.MEMORYTYPE_DEVICE, 0x2000, 0, 0, 0, 64, 8, 16, 2, 1, p -> {
                    assertEquals(0xabcL, UnsafeApi.getLong(p + Memcpy3D.DST_ARRAY));
                    assertEquals(16, UnsafeApi.getLong(p + Memcpy3D.DST_X));
                    assertEquals(2, UnsafeApi.getLong(p + Memcpy3D.DST_Y));
                    assertEquals(1, UnsafeApi.getLong(p + Memcpy3D.DST_Z));
                    assertEquals(0, UnsafeApi.getLong(p + Memcpy3D.DST_DEVICE));
                    assertEquals(0x2000, UnsafeApi.getLong(p + Memcpy3D.SRC_DEVICE));
                    throw new IllegalStateException("the driver call failed");
                }));
        assertEquals(before, NativeStruct.live());
    }

    /**
     * Per-thread native memory has no owner that frees it when a worker ends: JnaCudaBackend (and
     * its nested loaders) must keep none. Read by reflection without initialising the classes, so
     * no driver is needed.
     */
    @Test
    void theDriverBackendKeepsNoPerThreadNativeMemory() throws Exception {
        List<Class<?>> classes = new ArrayList<>(List.of(JnaCudaBackend.class.getDeclaredClasses()));
        classes.add(JnaCudaBackend.class);
        for (Class<?> c : classes) {
            for (Field f : c.getDeclaredFields()) {
                assertTrue(!ThreadLocal.class.isAssignableFrom(f.getType()),
                        c.getSimpleName() + "." + f.getName() + " is a ThreadLocal: never freed when a worker ends");
            }
        }
    }
}
