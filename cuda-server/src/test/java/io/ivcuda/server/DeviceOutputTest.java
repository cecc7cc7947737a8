package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.StdoutCapture;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.gen.Requests;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Device printf's transport: what is written to libc's stdout in a worker's thread during a call
 * reaches that worker's process (output_pending set on the response, ivc_device_output_read
 * answers it, oldest first), never another process; bounded, with the lost bytes counted. The
 * host-memory backend runs no kernels: a test-only hook writes through libc's stdout in
 * cuCtxSynchronize, in the worker's thread, as the driver does when it flushes printf output.
 */
class DeviceOutputTest extends StartedServerCase<DeviceOutputTest.PrintingBackend> {
    static final long TOKEN = (91L << 32) | 3;
    static final long OTHER = (92L << 32) | 4;

    /** libc's stdio, for the hook: the real stream the driver would write through. */
    interface Stdio extends Library {
        Stdio C = Native.load(Platform.C_LIBRARY_NAME, Stdio.class);

        int fputs(String s, Pointer stream);
    }

    static void printThroughLibcStdout(String text) {
        Pointer stdout = NativeLibrary.getInstance(Platform.C_LIBRARY_NAME).getGlobalVariableAddress("stdout").getPointer(0);
        Stdio.C.fputs(text, stdout);
    }

    /** Host memory, plus the hook: cuCtxSynchronize prints what the test set for the calling process. */
    static final class PrintingBackend extends HostMemoryBackend {
        final Map<Long, String> print = new ConcurrentHashMap<>();
        volatile long caller;

        @Override
        public int ctxSynchronize() {
            String text = print.remove(caller);
            if (text != null) {
                printThroughLibcStdout(text);
            }
            return super.ctxSynchronize();
        }
    }

    DeviceOutputTest() {
        super(TOKEN, PrintingBackend::new);
    }

    @BeforeAll
    static void capture() {
        assumeTrue(StdoutCapture.install(), "libc's stdout can be captured here (glibc)");
    }

    Channel greeted(int index, long token) {
        Channel c = guest.claim(index, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
        return c;
    }

    /** cuCtxSynchronize on c, the hook printing text for the process of token. */
    Response sync(Channel c, long token, String text) {
        backend.caller = token;
        if (text != null) {
            backend.print.put(token, text);
        }
        return c.call(Requests.cuCtxSynchronize());
    }

    record Read(String text, long dropped, long withheld) {
    }

    static Read read(Channel c, int capacity) {
        Response r = c.call(Requests.ivc_device_output_read(capacity));
        assertEquals(CuResult.SUCCESS, r.result());
        int length = (int) r.buffer().getLong(r.payload() + 16, java.nio.ByteOrder.LITTLE_ENDIAN);
        byte[] b = new byte[length];
        r.buffer().getBytes(r.payload() + 24, b);
        return new Read(new String(b, StandardCharsets.ISO_8859_1), r.out(0), r.out(1));
    }

    @Test
    void whatTheDriverPrintsInTheCallReachesTheCallingProcess() {
        Channel c = greeted(0, TOKEN);
        assertEquals(CuResult.SUCCESS, sync(c, TOKEN, null).result());
        assertEquals(0, c.control.outputPending(), "nothing printed, nothing pending");

        assertEquals(CuResult.SUCCESS, sync(c, TOKEN, "hello from block 0\n").result());
        assertEquals(1, c.control.outputPending(), "the sync's response says output waits");
        Read r = read(c, 4096);
        assertEquals(new Read("hello from block 0\n", 0, 0), r);
        assertEquals(0, c.control.outputPending(), "all read: the read's own response says none");
    }

    @Test
    void outputIsReadInPiecesOldestFirst() {
        Channel c = greeted(0, TOKEN);
        sync(c, TOKEN, "first line\n");
        sync(c, TOKEN, "second line\n");
        StringBuilder all = new StringBuilder();
        int reads = 0;
        while (c.control.outputPending() != 0) {
            all.append(read(c, 8).text());
            reads++;
        }
        assertEquals("first line\nsecond line\n", all.toString());
        assertTrue(reads >= 3, "8-byte pieces: " + reads);
    }

    @Test
    void oneProcessNeverReadsAnothersOutput() {
        Channel a = greeted(0, TOKEN);
        Channel b = greeted(1, OTHER);
        sync(a, TOKEN, "from a\n");
        sync(b, OTHER, "from b\n");
        assertEquals(new Read("from b\n", 0, 0), read(b, 4096));
        assertEquals(new Read("from a\n", 0, 0), read(a, 4096));
        assertEquals(new Read("", 0, 0), read(b, 4096));
    }

    @Test
    void outputIsWithheldWhenTwoProcessesShareThePrimaryContext() {
        Channel a = greeted(0, TOKEN);
        Channel b = greeted(1, OTHER);
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuDevicePrimaryCtxRetain(0)).result());
        sync(a, TOKEN, "mine alone\n");
        assertEquals(new Read("mine alone\n", 0, 0), read(a, 4096), "only a uses the primary context");

        assertEquals(CuResult.SUCCESS, b.call(Requests.cuDevicePrimaryCtxRetain(0)).result());
        sync(a, TOKEN, "whose?\n");
        assertEquals(1, a.control.outputPending(), "the note is pending");
        assertEquals(new Read("", 0, 7), read(a, 4096));
        assertEquals(new Read("", 0, 0), read(b, 4096));
    }

    @Test
    void aBurstBeyondTheBoundIsCountedAsDropped() {
        burstBeyond((int) (long) ServerKeys.LIMIT_DEVICE_OUTPUT_BYTES.defaultValue());
    }

    /** The bound is the server's {@code limit.device.output.bytes}. */
    @Test
    void theBoundIsConfigured() throws Exception {
        stop();
        start(backend, ServerKeys.LIMIT_DEVICE_OUTPUT_BYTES.name() + "=64K");
        burstBeyond(64 << 10);
    }

    private void burstBeyond(int bound) {
        Channel c = greeted(0, TOKEN);
        int extra = 1000;
        sync(c, TOKEN, "x".repeat(bound + extra));
        long text = 0;
        long dropped = 0;
        while (c.control.outputPending() != 0) {
            Read r = read(c, 1 << 20);
            text += r.text().length();
            dropped += r.dropped();
        }
        assertEquals(bound, text);
        assertEquals(extra, dropped);
    }

    @Test
    void outputOfAThreadServingNoProcessReachesNone() {
        Channel c = greeted(0, TOKEN);
        long before = StdoutCapture.unattributed();
        printThroughLibcStdout("no one's\n");
        assertEquals(before + 9, StdoutCapture.unattributed());
        sync(c, TOKEN, null);
        assertEquals(0, c.control.outputPending());
    }
}
