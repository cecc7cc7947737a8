package io.ivcuda.server.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The poisoning policy on plain objects: which results, whom the recovery waits for, which hellos are refused. */
class FatalFaultTest {
    static final long A = (100L << 32) | 1;
    static final long B = (200L << 32) | 2;
    static final long LATE = (300L << 32) | 3;

    final Map<Long, Owner> owners = new ConcurrentHashMap<>();
    final AtomicInteger recoveries = new AtomicInteger();
    final CountDownLatch recovered = new CountDownLatch(1);
    /** Plain mode: the recovery replaces the CUDA process (counted here). */
    FatalFault fault = new FatalFault(owners, FatalFault.Recovery.restarting(() -> {
        recoveries.incrementAndGet();
        recovered.countDown();
    }));

    void gone(long token) {
        owners.remove(token);
        fault.reclaimed(token);
    }

    @Test
    void onlyTheStickyErrorsAreFatal() {
        // 810: another MPS client's fatal fault ended this one (cuda.h: "must be terminated and relaunched")
        for (int r : new int[] {700, 702, 710, 714, 715, 716, 717, 718, 719, 810}) {
            assertTrue(FatalFault.fatal(r), "CUresult " + r);
        }
        for (int r : new int[] {0, 1, 2, 46, 201, 400, 401, 701, 703, 708, 709, 711, 712, 713, 720, 802, 805, 806, 807, 808, 809, 811, 999}) {
            assertFalse(FatalFault.fatal(r), "CUresult " + r);
        }
    }

    @Test
    void anOrdinaryErrorPoisonsNothing() {
        owners.put(A, new Owner(A));
        fault.observe(100, Opcodes.IVC_LAUNCH, CuResult.INVALID_VALUE);
        fault.observe(100, Opcodes.IVC_LAUNCH, 701); // out of resources: the process goes on natively too
        assertFalse(fault.poisoned());
        assertNull(fault.helloRefusal());
        gone(A);
        assertEquals(0, recoveries.get());
    }

    @Test
    void theRecoveryWaitsForEveryProcessThatHeldStateAndRunsOnce() throws Exception {
        owners.put(A, new Owner(A));
        owners.put(B, new Owner(B));
        fault.observe(100, Opcodes.IVC_LAUNCH, 700);
        assertTrue(fault.poisoned());
        assertTrue(fault.fault().contains("pid 100") && fault.fault().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), fault.fault());
        // a second fault (the other process's next call) changes nothing
        fault.observe(200, Opcodes.IVC_LAUNCH, 710);
        assertTrue(fault.fault().contains("pid 100"), fault.fault());
        // a process that came after the fault is not waited for (it had no session: hellos are refused)
        owners.put(LATE, new Owner(LATE));
        gone(A);
        assertEquals(1, fault.waitingFor());
        Thread.sleep(50);
        assertEquals(0, recoveries.get(), "B still holds state");
        gone(B);
        assertTrue(recovered.await(10, TimeUnit.SECONDS));
        assertTrue(fault.recovering());
        fault.reclaimed(LATE);
        gone(LATE);
        Thread.sleep(50);
        assertEquals(1, recoveries.get(), "once");
    }

    @Test
    void helloIsRefusedWhilePoisonedWithRetryInPlainMode() {
        owners.put(A, new Owner(A));
        fault.observe(100, Opcodes.IVC_LAUNCH, 719);
        assertEquals(FatalFault.RESTARTING, fault.helloResult());
        assertTrue(fault.helloRefusal().contains("retry"), fault.helloRefusal());
    }

    @Test
    void doorbellModeStaysPoisonedAndSaysRestartTheVm() throws Exception {
        CountDownLatch told = new CountDownLatch(1);
        fault = new FatalFault(owners, new FatalFault.Recovery(told::countDown, "doorbell mode cannot restart it"));
        owners.put(A, new Owner(A));
        fault.observe(100, Opcodes.IVC_LAUNCH, 700);
        assertEquals(CuResult.NOT_INITIALIZED, fault.helloResult(), "no retry: nothing will restart");
        assertTrue(fault.helloRefusal().contains("restart the VM"), fault.helloRefusal());
        gone(A);
        assertTrue(told.await(10, TimeUnit.SECONDS), "the doorbell action (log and header message) ran");
        assertTrue(fault.poisoned(), "still poisoned");
        assertEquals(CuResult.NOT_INITIALIZED, fault.helloResult());
    }

    @Test
    void aFaultWithNoProcessLeftRecoversAtOnce() throws Exception {
        fault.observe(100, Opcodes.IVC_LAUNCH, 700); // its process's reclaim finished before the result was counted
        assertTrue(recovered.await(10, TimeUnit.SECONDS));
    }
}
