package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * The JIT logs of the linker and of module and library loads: the guest's log sizes become buffers
 * of the server's given to the driver (cut to {@code limit.jit.log.bytes}), which live with the link state
 * (or, for a load, on the channel until its next load); what the driver wrote there and in the
 * output options comes back through ivc_jit_log_read (link state 0: the last load), cut to the
 * guest's capacity. The backend stands in for the driver's linker and loader: it writes its logs and
 * wall time where the options say, at cuLinkComplete and during a load, as the driver does.
 */
class JitLogTest extends StartedServerCase<JitLogTest.LoggingLinker> {
    static final long TOKEN = (84L << 32) | 7;
    static final long STATE = 0xC100;

    static final class LoggingLinker extends HostMemoryBackend {
        final Map<Integer, Long> given = new HashMap<>();
        long options;
        long values;
        int count;

        @Override
        public int linkCreate(Out o, int count, long options, long values) {
            this.count = count;
            this.options = options;
            this.values = values;
            for (int i = 0; i < count; i++) {
                given.put(UnsafeApi.getInt(options + 4L * i), UnsafeApi.getLong(values + 8L * i));
            }
            o.handle = STATE;
            return CuResult.SUCCESS;
        }

        @Override
        public int linkComplete(Out o, long state) {
            write("info    : 0 bytes gmem\n", "", 1.5f);
            o.address = UnsafeApi.allocateMemory(8);
            o.bytes = 8;
            return CuResult.SUCCESS;
        }

        /**
         * As the driver: each log's text (null: none written) into its buffer, the bytes filled into
         * its size option, the time over CU_JIT_WALL_TIME's value.
         */
        private void write(String info, String error, float wall) {
            for (int i = 0; i < count; i++) {
                int option = UnsafeApi.getInt(options + 4L * i);
                String text = option == 3 ? info : option == 5 ? error : null;
                if (text != null) {
                    long buffer = UnsafeApi.getLong(values + 8L * i);
                    byte[] b = text.getBytes(StandardCharsets.US_ASCII);
                    for (int k = 0; k < b.length; k++) {
                        UnsafeApi.putByte(buffer + k, b[k]);
                    }
                    UnsafeApi.putByte(buffer + b.length, (byte) 0);
                    setFilled(option + 1, b.length + 1);
                } else if (option == 2) {
                    UnsafeApi.putLong(values + 8L * i, Float.floatToIntBits(wall) & 0xFFFF_FFFFL);
                }
            }
        }

        private void setFilled(int sizeOption, long filled) {
            for (int i = 0; i < count; i++) {
                if (UnsafeApi.getInt(options + 4L * i) == sizeOption) {
                    UnsafeApi.putLong(values + 8L * i, filled);
                }
            }
        }

        @Override
        public int linkDestroy(long state) {
            return CuResult.SUCCESS;
        }

        /** What the last load was given: its options, and whether it went through the Ex call. */
        volatile int loadCount = -1;
        volatile boolean loadedEx;
        /** The next load's answer and its info and error text (null: the driver writes nothing there). */
        volatile int loadResult = CuResult.SUCCESS;
        volatile String infoText = "module info";
        volatile String errorText = null;

        @Override
        public int moduleLoadData(Out o, long image) {
            loadCount = 0;
            loadedEx = false;
            o.handle = 0xD000;
            return loadResult;
        }

        @Override
        public int moduleLoadDataEx(Out o, long image, int count, long options, long values) {
            loadedEx = true;
            return driverLoad(o, count, options, values);
        }

        @Override
        public int libraryLoadData(Out o, long image, long options, long values, int count) {
            loadedEx = true;
            return driverLoad(o, count, options, values);
        }

        /** As the driver during a load with options: the logs, their counts and the time. */
        private int driverLoad(Out o, int count, long options, long values) {
            this.count = count;
            this.options = options;
            this.values = values;
            loadCount = count;
            given.clear();
            for (int i = 0; i < count; i++) {
                given.put(UnsafeApi.getInt(options + 4L * i), UnsafeApi.getLong(values + 8L * i));
            }
            write(infoText, errorText, 0.75f);
            o.handle = 0xD100;
            return loadResult;
        }
    }

    JitLogTest() {
        super(TOKEN, LoggingLinker::new);
    }

    /** The cut is the server's {@code limit.jit.log.bytes}; a log asked smaller keeps its size. */
    @Test
    void logBuffersAreCutToTheConfiguredLimit() throws Exception {
        stop();
        start(backend, ServerKeys.LIMIT_JIT_LOG_BYTES.name() + "=4K");
        Channel c = greeted(0);
        byte[] options = pairs(4, 8192, 6, 100);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_create(options, options.length)).result());
        assertEquals(4096L, backend.given.get(4), "the info log cut to 4 KiB");
        assertEquals(100L, backend.given.get(6), "the error log as asked");
    }

    static byte[] pairs(long... optionValue) {
        ByteBuffer b = ByteBuffer.allocate(8 * optionValue.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : optionValue) {
            b.putLong(v);
        }
        return b.array();
    }

    record Log(String text, long filled, float wall) {
    }

    static Log read(Channel c, long state, int which, int capacity) {
        Response r = c.call(Requests.ivc_jit_log_read(capacity, which, state));
        assertEquals(CuResult.SUCCESS, r.result());
        int length = (int) r.buffer().getLong(r.payload() + 16, ByteOrder.LITTLE_ENDIAN);
        byte[] b = new byte[length];
        r.buffer().getBytes(r.payload() + 24, b);
        String text = new String(b, StandardCharsets.US_ASCII);
        return new Log(text.isEmpty() ? text : text.substring(0, text.indexOf('\0')), r.out(0),
                Float.intBitsToFloat((int) r.out(1)));
    }

    @Test
    void logsAndWallTimeComeBackCutToTheGuestsBuffer() {
        Channel c = greeted(0);
        byte[] options = pairs(4, 8192, 6, 100_000_000, 2, 0, 11, 1); // info 8 KiB, error huge, time, verbose
        Response created = c.call(Requests.ivc_link_create(options, options.length));
        assertEquals(CuResult.SUCCESS, created.result());
        long state = created.out(0);
        assertEquals(8192L, backend.given.get(4), "the guest's info size");
        assertEquals(ServerKeys.LIMIT_JIT_LOG_BYTES.defaultValue(), backend.given.get(6), "the error log cut to the server's limit");
        assertNotNull(backend.given.get(3), "a buffer of the server's");
        assertEquals(1L, backend.given.get(11), "scalar options pass");
        assertEquals(new Log("", 8192, 0f), read(c, state, 0, 8192),
                "nothing logged before the driver writes; the size option still holds what went in, as natively");

        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_complete(state)).result());
        assertEquals(new Log("info    : 0 bytes gmem\n", 24, 1.5f), read(c, state, 0, 8192));
        assertEquals(new Log("info", 24, 1.5f), read(c, state, 0, 5), "cut to the capacity, with its NUL");
        assertEquals(new Log("", 1, 1.5f), read(c, state, 1, 8192), "an empty error log");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_jit_log_read(100, 2, state)).result());

        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_destroy(state)).result());
        assertNull(server.vm().libraries().linkLogsOf(STATE), "freed with the state");
    }

    @Test
    void theGuestNeverPassesPointers() {
        Channel c = greeted(0);
        for (long pointerOption : new long[] {3, 5}) {
            byte[] options = pairs(pointerOption, 0x1234);
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_link_create(options, options.length)).result());
        }
        byte[] zero = pairs(4, 0);
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_link_create(zero, zero.length)).result(),
                "a log of no bytes");
    }

    private static Response moduleLoad(Channel c, byte[] jit) {
        byte[] image = "// a module's PTX\n\0".getBytes(StandardCharsets.US_ASCII);
        return c.streamRequest(Requests.ivc_module_load(LaunchAndModuleTest.fnv1a(image), image.length, 1, jit,
                jit.length), image);
    }

    @Test
    void aModuleLoadsLogsComeBackFromTheChannelsLastLoad() {
        Channel c = greeted(0);
        // info 100, error 50, the time, CU_JIT_LOG_VERBOSE 1 (passed on), CU_JIT_FTZ 1 (not a
        // library's either: left out for a module, which always accepted every option)
        Response loaded = moduleLoad(c, pairs(4, 100, 6, 50, 2, 0, 12, 1, 21, 1));
        assertEquals(CuResult.SUCCESS, loaded.result());
        assertEquals(true, backend.loadedEx);
        assertEquals(6, backend.loadCount, "two logs (buffer and size each), the time and the verbose flag");
        assertEquals(1L, backend.given.get(12), "a safe scalar option passes");
        assertNull(backend.given.get(21), "another option is left out, not refused");
        assertEquals(100L, backend.given.get(4));
        assertNotNull(backend.given.get(5), "a buffer of the server's for the error log");
        assertEquals(new Log("module info", 12, 0.75f), read(c, 0, 0, 100));
        assertEquals(new Log("mod", 12, 0.75f), read(c, 0, 0, 4), "cut to the capacity, with its NUL");
        assertEquals(new Log("", 50, 0.75f), read(c, 0, 1, 50), "the driver wrote no error: its size stays");

        // a load without options replaces the last load's logs: nothing left to read
        assertEquals(CuResult.SUCCESS, moduleLoad(c, new byte[0]).result());
        assertEquals(false, backend.loadedEx, "no options: cuModuleLoadData, as before");
        assertEquals(new Log("", 0, 0f), read(c, 0, 0, 100));
    }

    @Test
    void aFailedLoadsErrorLogIsRead() {
        Channel c = greeted(0);
        backend.loadResult = 218; // CUDA_ERROR_INVALID_PTX
        backend.infoText = null;
        backend.errorText = "ptxas fatal   : Unresolved extern function 'f'";
        assertEquals(218, moduleLoad(c, pairs(6, 4096)).result());
        assertEquals(new Log("ptxas fatal   : Unresolved extern function 'f'", 47, 0f), read(c, 0, 1, 4096));
    }

    @Test
    void aLibraryLoadPassesItsSafeOptionsWithTheLogs() {
        Channel c = greeted(0);
        byte[] image = "// a library's PTX\n\0".getBytes(StandardCharsets.US_ASCII);
        byte[] jit = pairs(0, 32, 4, 64, 2, 0);
        Response r = c.streamRequest(Requests.ivc_library_load(LaunchAndModuleTest.fnv1a(image), image.length, 1,
                jit, jit.length), image);
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(4, backend.loadCount, "the scalar, the info log's buffer and size, the time");
        assertEquals(32L, backend.given.get(0), "a library's safe scalar options pass, as before");
        assertEquals(new Log("module info", 12, 0.75f), read(c, 0, 0, 64));
        byte[] pointer = pairs(3, 0x1234);
        assertEquals(CuResult.INVALID_VALUE, c.streamRequest(Requests.ivc_library_load(
                LaunchAndModuleTest.fnv1a(image), image.length, 1, pointer, pointer.length), image).result(),
                "a log buffer's pointer is never taken from the guest");
    }

    @Test
    void aLogAskedForTwiceIsRefused() {
        Channel c = greeted(0);
        // two info sizes would take more driver slots than the block was made for
        byte[] twice = pairs(4, 16, 4, 16);
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_link_create(twice, twice.length)).result());
        assertEquals(CuResult.INVALID_VALUE, moduleLoad(c, twice).result());
        assertEquals(-1, backend.loadCount, "refused before the driver");
    }

    @Test
    void withoutLogsTheReadAnswersNothing() {
        Channel c = greeted(0);
        long state = c.call(Requests.ivc_link_create(new byte[0], 0)).out(0);
        assertEquals(0, backend.count);
        assertEquals(new Log("", 0, 0f), read(c, state, 0, 100));
    }
}
