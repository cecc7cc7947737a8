package io.ivcuda.server;

import static io.ivcuda.server.ServerIntegrationTest.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.metrics.VmFigures;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.core.FatalFault;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.HeaderFlyweight;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The server's side of the recovery from a fatal GPU fault (docs/architecture.md, "Fault recovery"):
 * poisoned by the first sticky result, hellos refused meanwhile, the process replaced once every
 * process that held state was reclaimed, and a new server on the region taking over with the next
 * epoch. The host-memory backend never faults (it is no GPU): the stand-in below answers
 * cuCtxSynchronize with CUDA_ERROR_ILLEGAL_ADDRESS from a moment the test chooses, as the driver does
 * after a kernel faulted — the result is the test's input, the server's policy is what is tested.
 * The exec itself is recorded here instead of done (it would replace the test's JVM).
 */
class FaultRecoveryTest extends HostMemoryGuestCase {
    static final long TOKEN = (4100L << 32) | 0x11;
    static final long NEXT = (4200L << 32) | 0x22;

    /** Host memory whose cuCtxSynchronize answers 700 once armed, for good (the error is sticky). */
    static final class FaultingBackend extends HostMemoryBackend {
        volatile boolean faulted;

        @Override
        public int ctxSynchronize() {
            return faulted ? CuResult.ILLEGAL_ADDRESS : super.ctxSynchronize();
        }
    }

    @Override
    long token() {
        return TOKEN;
    }

    HeaderFlyweight header() {
        return new HeaderFlyweight().wrap(guest.region.view(0, HeaderFlyweight.LENGTH), 0);
    }

    @Test
    void aFatalFaultPoisonsRefusesNewcomersAndReplacesTheProcessOnceItsProcessExited() throws Exception {
        FaultingBackend backend = new FaultingBackend();
        start(backend, "pidfile=" + dir.resolve("vm.pid"));
        AtomicReference<String> replaced = new AtomicReference<>();
        AtomicReference<Integer> stateAtReplace = new AtomicReference<>();
        server.replaceProcessWith(fault -> {
            stateAtReplace.set(header().serverStateVolatile());
            replaced.set(fault);
            return null;
        });
        int epoch = header().epoch();
        Channel a = greeted(0);
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuCtxSynchronize()).result());
        backend.faulted = true;
        assertEquals(CuResult.ILLEGAL_ADDRESS, a.call(Requests.cuCtxSynchronize()).result());
        assertTrue(server.vm().fatalFault().poisoned());
        Properties status = status();
        assertTrue(status.getProperty(StatusFile.FATAL_FAULT, "").contains("CUDA_ERROR_ILLEGAL_ADDRESS"), status.toString());
        assertEquals("0", status.getProperty(StatusFile.RECOVERIES));
        VmFigures figures = VmFigures.read(status, "vm", "");
        assertTrue(figures.fatalFault(), "the metrics' ivcuda_fatal_fault is 1");
        assertEquals(0, figures.recoveries());

        // a newcomer gets no session in the poisoned process: told to retry
        Channel b = guest.claim(1, NEXT);
        assertEquals(FatalFault.RESTARTING, b.hello().result());
        // the faulting process still holds state: nothing is replaced under it
        Thread.sleep(200);
        assertNull(replaced.get());
        assertEquals(HeaderFlyweight.STATE_READY, header().serverStateVolatile());

        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_process_exit()).result());
        a.release();
        awaitTrue(() -> replaced.get() != null, "the process replaced once the faulting process was reclaimed");
        assertTrue(replaced.get().contains("pid 4100"), replaced.get());
        assertEquals(HeaderFlyweight.STATE_INIT, stateAtReplace.get(), "INIT before the exec: guests wait for READY");
        assertEquals(HeaderFlyweight.MAGIC, header().magic(), "the region stays an ivcuda region");

        // the new image: the same configuration on the same region, a driver that never faulted
        server.close();
        server = new CudaServer(ServerConfig.load(List.of(), List.of("region.path=" + dir.resolve("region"),
                "region.size=" + SIZE, "channel.count=4", "backend=host-memory")), new HostMemoryBackend());
        server.start();
        assertEquals(epoch + 1, header().epoch(), "a guest attached before sees the server restarted");
        assertEquals(HeaderFlyweight.STATE_READY, header().serverStateVolatile());
        Channel next = guest.claim(2, NEXT);
        assertEquals(CuResult.SUCCESS, next.hello().result());
        assertEquals(CuResult.SUCCESS, next.call(Requests.cuInit(0)).result());
        assertEquals(CuResult.SUCCESS, next.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void pastItsRecoveryLimitTheServerStaysPoisonedAndSaysRestartTheVm() throws Exception {
        FaultingBackend backend = new FaultingBackend();
        start(backend, "limit.recoveries=0");
        AtomicReference<String> replaced = new AtomicReference<>();
        server.replaceProcessWith(fault -> {
            replaced.set(fault);
            return null;
        });
        Channel a = greeted(0);
        backend.faulted = true;
        assertEquals(CuResult.ILLEGAL_ADDRESS, a.call(Requests.cuCtxSynchronize()).result());
        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_process_exit()).result());
        a.release();
        awaitTrue(() -> server.vm().fatalFault().recovering(), "the recovery action ran once the process was reclaimed");
        Thread.sleep(200);
        assertNull(replaced.get(), "no replacement past limit.recoveries");
        assertEquals(HeaderFlyweight.STATE_READY, header().serverStateVolatile());
        assertTrue(header().serverMessage().contains("restart the VM"), header().serverMessage());
        // a newcomer is not told to retry (nothing will change): restart the VM
        Channel b = guest.claim(1, NEXT);
        assertEquals(CuResult.NOT_INITIALIZED, b.hello().result());
        assertTrue(server.vm().fatalFault().helloRefusal().contains("will not replace it again"),
                server.vm().fatalFault().helloRefusal());
    }

    @Test
    void anOrdinaryErrorLeavesTheServerAsItWas() throws Exception {
        start(new HostMemoryBackend());
        server.replaceProcessWith(fault -> {
            throw new AssertionError("replaced after " + fault);
        });
        Channel a = greeted(0);
        assertEquals(CuResult.INVALID_HANDLE, a.call(Requests.cuStreamSynchronize(0xdead0L)).result());
        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_process_exit()).result());
        a.release();
        Channel b = guest.claim(1, NEXT);
        assertEquals(CuResult.SUCCESS, b.hello().result());
        assertTrue(!server.vm().fatalFault().poisoned());
    }
}
