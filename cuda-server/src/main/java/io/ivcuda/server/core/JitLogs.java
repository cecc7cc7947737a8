package io.ivcuda.server.core;

import java.nio.ByteOrder;
import java.util.function.LongPredicate;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * The JIT options one link state gives the driver, with the log buffers and output values the
 * driver fills (docs/kernels.md, "JIT logs"). The guest asks for a log by sending
 * {@code CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES} / {@code CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES} with its
 * own buffer's size, and for the time by {@code CU_JIT_WALL_TIME}; the server gives the driver
 * buffers of its own (at most {@code limit.jit.log.bytes} each) and answers what they hold through
 * {@code ivc_jit_log_read}. The driver writes into them and into the option values during every
 * call of the link state (cuda.h: "optionValues must remain valid for the life of the CUlinkState
 * if output options are used"), so all of it is one native block, freed after cuLinkDestroy. A
 * module or library load (cuModuleLoadDataEx, cuLibraryLoadData) uses the same block for its one
 * call; its channel's session keeps it until the next load, for the guest to read the logs.
 */
public final class JitLogs {
    static final int WALL_TIME = 2;
    static final int INFO_LOG_BUFFER = 3;
    static final int INFO_LOG_BUFFER_SIZE_BYTES = 4;
    static final int ERROR_LOG_BUFFER = 5;
    static final int ERROR_LOG_BUFFER_SIZE_BYTES = 6;
    /** Marks an option left out (no CUjit_option is negative). */
    private static final long DROPPED = -1;

    /** The block: options (int[]), values (void*[]), the info log, the error log. */
    private final long block;
    private final int count;
    private final int capacity;
    private final long[] logs = new long[2];
    private final int[] logSizes = new int[2];
    private final int[] sizeSlots = {-1, -1};
    private int wallSlot = -1;
    /** Gives the log bytes back to the budget they were counted in (link states only); null: not counted. */
    private Runnable uncharge;

    private JitLogs(int capacity, int infoSize, int errorSize, int count) {
        this.capacity = capacity;
        this.count = count;
        long bytes = Math.max(8, 12L * capacity + infoSize + errorSize);
        block = UnsafeApi.allocateMemory(bytes);
        UnsafeApi.setMemory(block, bytes, (byte) 0);
        logs[0] = values() + 8L * capacity;
        logs[1] = logs[0] + infoSize;
        logSizes[0] = infoSize;
        logSizes[1] = errorSize;
    }

    public int count() {
        return count;
    }

    /** The bytes of its log buffers (info and error): what a link state counts against {@link JitLogBudget}. */
    public long logBytes() {
        return (long) logSizes[0] + logSizes[1];
    }

    /** Counted in a budget: {@link #free} gives the bytes back with {@code uncharge}, whoever frees it. */
    public void charged(Runnable uncharge) {
        this.uncharge = uncharge;
    }

    public long options() {
        return block;
    }

    public long values() {
        return block + 4L * capacity;
    }

    /**
     * The driver's options for the guest's (option, value) pairs, each read once: the scalar options
     * the server passes on ({@code safe}), plus the logs and the time asked for; or why they are
     * refused (a String). Each log buffer holds at most {@code logLimit} bytes ({@code limit.jit.log.bytes}).
     */
    public static Object parse(DirectBuffer in, int index, int length, long size, int max, LongPredicate safe, int logLimit) {
        return parse(in, index, length, size, max, safe, false, logLimit);
    }

    /**
     * As {@link #parse(DirectBuffer, int, int, long, int, LongPredicate)} for a module load
     * (cuModuleLoadDataEx), which always accepted every option: the ones the server passes on
     * ({@code safe}) go to the driver with the logs and the time, the others are left out, not
     * refused (docs/kernels.md).
     */
    public static Object parseDroppingOthers(DirectBuffer in, int index, int length, long size, int max,
                                             LongPredicate safe, int logLimit) {
        return parse(in, index, length, size, max, safe, true, logLimit);
    }

    private static Object parse(DirectBuffer in, int index, int length, long size, int max, LongPredicate safe,
                                boolean dropOthers, int logLimit) {
        int count = length / 16;
        if (length != size || length % 16 != 0 || count > max) {
            return "jitOptionsSize " + size + " is not (option, value) pairs of at most " + max;
        }
        long[] option = new long[count];
        long[] value = new long[count];
        int info = 0;
        int error = 0;
        boolean wall = false;
        for (int i = 0; i < count; i++) {
            option[i] = in.getLong(index + 16 * i, ByteOrder.LITTLE_ENDIAN);
            value[i] = in.getLong(index + 16 * i + 8, ByteOrder.LITTLE_ENDIAN);
            if (option[i] == INFO_LOG_BUFFER_SIZE_BYTES || option[i] == ERROR_LOG_BUFFER_SIZE_BYTES) {
                if (value[i] < 1 || value[i] > 0xFFFF_FFFFL) {
                    return "JIT log size " + value[i] + " is not in 1.." + 0xFFFF_FFFFL;
                }
                int bytes = (int) Math.min(value[i], logLimit);
                // each log once: a second would take two more driver slots than were counted
                if ((option[i] == INFO_LOG_BUFFER_SIZE_BYTES ? info : error) != 0) {
                    return "JIT option " + option[i] + " is given twice";
                }
                if (option[i] == INFO_LOG_BUFFER_SIZE_BYTES) {
                    info = bytes;
                } else {
                    error = bytes;
                }
            } else if (option[i] == WALL_TIME) {
                wall = true;
            } else if (!safe.test(option[i])) {
                if (!dropOthers) {
                    return "JIT option " + option[i] + " is not one the server passes on";
                }
                option[i] = DROPPED;
            }
        }
        int dropped = 0;
        for (long o : option) {
            dropped += o == DROPPED ? 1 : 0;
        }
        int driverCount = count - dropped + (info > 0 ? 1 : 0) + (error > 0 ? 1 : 0);
        JitLogs j = new JitLogs(driverCount, info, error, driverCount);
        int n = 0;
        for (int i = 0; i < count; i++) {
            if (option[i] == INFO_LOG_BUFFER_SIZE_BYTES || option[i] == ERROR_LOG_BUFFER_SIZE_BYTES) {
                int which = option[i] == INFO_LOG_BUFFER_SIZE_BYTES ? 0 : 1;
                j.put(n++, which == 0 ? INFO_LOG_BUFFER : ERROR_LOG_BUFFER, j.logs[which]);
                j.sizeSlots[which] = n;
                j.put(n++, (int) option[i], j.logSizes[which]);
            } else if (option[i] == WALL_TIME) {
                j.wallSlot = n;
                j.put(n++, WALL_TIME, 0);
            } else if (option[i] != DROPPED) {
                j.put(n++, (int) option[i], value[i]);
            }
        }
        return j;
    }

    private void put(int slot, int option, long value) {
        UnsafeApi.putInt(block + 4L * slot, option);
        UnsafeApi.putLong(values() + 8L * slot, value);
    }

    /** Whether the guest asked for log {@code which} (0 info, 1 error). */
    public boolean has(int which) {
        return sizeSlots[which] >= 0;
    }

    /** What log {@code which} holds now: its text's length (up to its NUL, within the buffer). */
    public int length(int which) {
        long p = logs[which];
        int n = 0;
        while (n < logSizes[which] && UnsafeApi.getByte(p + n) != 0) {
            n++;
        }
        return n;
    }

    public long address(int which) {
        return logs[which];
    }

    /** The driver's own count of what it filled (its OUT value), within the buffer's size. */
    public int filled(int which) {
        long v = UnsafeApi.getLong(values() + 8L * sizeSlots[which]) & 0xFFFF_FFFFL;
        return (int) Math.min(v, logSizes[which]);
    }

    /** The wall time's float bits the driver wrote over the option's value (0 when not asked). */
    public int wallTimeBits() {
        return wallSlot < 0 ? 0 : UnsafeApi.getInt(values() + 8L * wallSlot);
    }

    public void free() {
        UnsafeApi.freeMemory(block);
        if (uncharge != null) {
            uncharge.run();
        }
    }
}
