package io.ivcuda.server.backend;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Takes what the driver prints for kernels (device printf, a failed device assert's message) away
 * from the server's own stdout and hands it to the guest process it belongs to (docs/kernels.md).
 *
 * <p>The driver writes that output through libc's {@code stdout} at synchronisation points, in the
 * thread that made the synchronising call. {@link #install} points libc's {@code stdout} at a
 * stream of our own ({@code fopencookie}, unbuffered, so every write reaches us in the thread that
 * made it, never mixed in a shared buffer with another thread's) whose write function hands the
 * bytes to the {@link Sink} of the calling thread: a channel worker sets its process's sink once it
 * knows the process ({@link #serve}). Attribution is therefore by thread, with no lock around the
 * driver's calls. Bytes written by a thread that serves no process (none is known to print so) are
 * counted and logged, never given to a process.
 *
 * <p>Linux/glibc only ({@code stdout} is an assignable variable there, {@code fopencookie} a glibc
 * call); the server's own logging goes to stderr (log4j2.xml), Java's {@code System.out} does not
 * use libc's stream, and nothing else of the server writes to libc's {@code stdout}.
 */
public final class StdoutCapture {
    private static final Logger LOG = LogManager.getLogger(StdoutCapture.class);
    private static final int IONBF = 2; // <stdio.h> _IONBF

    /** Where a thread's captured bytes go. Called in the driver's call: must not block or call CUDA. */
    @FunctionalInterface
    public interface Sink {
        void write(byte[] bytes);
    }

    private static final ThreadLocal<Sink> SINK = new ThreadLocal<>();
    private static final AtomicLong UNATTRIBUTED = new AtomicLong();
    private static volatile boolean installed;
    // the stream's functions must stay reachable as long as libc may call them: for good
    private static CookieIo io;

    private StdoutCapture() {
    }

    /** The calling thread's sink (null: none, its output is logged as unattributed). */
    public static void serve(Sink sink) {
        if (sink == null) {
            SINK.remove();
        } else {
            SINK.set(sink);
        }
    }

    public static boolean installed() {
        return installed;
    }

    /** Bytes written to the captured stream by threads serving no process, since start. */
    public static long unattributed() {
        return UNATTRIBUTED.get();
    }

    /**
     * Points libc's {@code stdout} at the capturing stream, once per server process; before cuInit,
     * so the driver never sees the old stream. Answers false (and logs why) where that cannot be done.
     */
    public static synchronized boolean install() {
        if (installed) {
            return true;
        }
        try {
            LibStdio c = Native.load(Platform.C_LIBRARY_NAME, LibStdio.class);
            Pointer variable = NativeLibrary.getInstance(Platform.C_LIBRARY_NAME).getGlobalVariableAddress("stdout");
            CookieIo functions = new CookieIo();
            functions.write = StdoutCapture::written;
            Pointer stream = c.fopencookie(null, "w", functions);
            if (stream == null) {
                LOG.warn("device printf stays on the server's stdout: fopencookie failed");
                return false;
            }
            c.setvbuf(stream, null, IONBF, 0);
            c.fflush(variable.getPointer(0)); // what the old stream holds goes out where it was meant to
            io = functions;
            variable.setPointer(0, stream);
            installed = true;
            LOG.info("device printf: the driver's stdout is captured per guest process");
            return true;
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            LOG.warn("device printf stays on the server's stdout: {}", e.toString());
            return false;
        }
    }

    /** The stream's write function: libc calls it in the writing thread, bytes not yet copied. */
    private static long written(Pointer cookie, Pointer buffer, long size) {
        try {
            if (size <= 0 || buffer == null) {
                return 0;
            }
            int n = (int) Math.min(size, Integer.MAX_VALUE);
            Sink sink = SINK.get();
            if (sink != null) {
                sink.write(buffer.getByteArray(0, n));
            } else {
                long before = UNATTRIBUTED.getAndAdd(n);
                // said at the first byte and then once per MiB, whatever writes
                if (before == 0 || (before >>> 20) != ((before + n) >>> 20)) {
                    LOG.warn("{} bytes written to stdout by threads serving no guest process (device output of "
                            + "no known process): dropped", before + n);
                }
            }
            return n;
        } catch (Throwable t) {
            // never unwind into libc: the bytes are lost, the stream stays usable
            return size;
        }
    }

    /** libc's stdio calls the capture needs (JNA interface mapping: a struct by value). */
    interface LibStdio extends Library {
        Pointer fopencookie(Pointer cookie, String mode, CookieIo functions);

        int setvbuf(Pointer stream, Pointer buffer, int mode, long size);

        int fflush(Pointer stream);
    }

    /** {@code ssize_t write(void *cookie, const char *buf, size_t size)} */
    public interface WriteFunction extends Callback {
        long invoke(Pointer cookie, Pointer buffer, long size);
    }

    /** glibc's {@code cookie_io_functions_t}: read, write, seek, close; only write is ours. */
    @Structure.FieldOrder({"read", "write", "seek", "close"})
    public static class CookieIo extends Structure implements Structure.ByValue {
        public Pointer read;
        public WriteFunction write;
        public Pointer seek;
        public Pointer close;
    }
}
