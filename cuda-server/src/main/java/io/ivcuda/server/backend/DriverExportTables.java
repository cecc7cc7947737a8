package io.ivcuda.server.backend;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The host driver's private export tables, for the slots the guest library cannot emulate
 * (docs/export-tables.md): fetched with the driver's {@code cuGetExportTable} and called through
 * JNA {@link Function}. The guest emulates every other slot in its own process.
 */
final class DriverExportTables {
    private static final Logger LOG = LogManager.getLogger(DriverExportTables.class);

    /** d4082055-bde6-704b-8d34-ba123c66e1f2, the integrity check, as cudart passes it. */
    static final byte[] INTEGRITY_CHECK = {(byte) 0xd4, 0x08, 0x20, 0x55, (byte) 0xbd, (byte) 0xe6, 0x70, 0x4b,
        (byte) 0x8d, 0x34, (byte) 0xba, 0x12, 0x3c, 0x66, (byte) 0xe1, (byte) 0xf2};
    /** The table's first word: its size, 24 bytes with driver 580 (api/reference, EXP lines). */
    private static final long INTEGRITY_TABLE_MIN_SIZE = 16;
    /** Bytes the guest receives; the driver is given more, set to a pattern, to see it wrote no further. */
    private static final int ANSWER_BYTES = 16;
    private static final int GUARDED_BYTES = 64;
    private static final byte GUARD = (byte) 0xa5;

    /** 1734dc26-800d-4745-8726-c0f1e7dd8bca, asked by cuBLASLt for its nvjet kernels: the SM topology. */
    static final byte[] SM_TOPOLOGY = {0x17, 0x34, (byte) 0xdc, 0x26, (byte) 0x80, 0x0d, 0x47, 0x45, (byte) 0x87, 0x26,
        (byte) 0xc0, (byte) 0xf1, (byte) 0xe7, (byte) 0xdd, (byte) 0x8b, (byte) 0xca};
    /** Slots 4 (hand out) and 13 (give back): at least 14 words; 136 bytes with driver 580. */
    private static final long SM_TOPOLOGY_MIN_SIZE = 14 * 8;
    /** Where in the caller's scratch the two arrays the driver hands out are copied (first, then second). */
    static final int SM_TOPOLOGY_COPY = CudaBackend.SM_TOPOLOGY_OFFSET;
    private static final AtomicBoolean SM_TOPOLOGY_SAID = new AtomicBoolean();

    private final Function integrityCheck;
    private final Function smTopology;
    private final Function smTopologyRelease;

    /** @param scratch native memory of at least 64 bytes, for cuGetExportTable's arguments */
    DriverExportTables(long scratch) {
        integrityCheck = slot(scratch, INTEGRITY_CHECK, 1, INTEGRITY_TABLE_MIN_SIZE, "integrity check d4082055");
        smTopology = slot(scratch, SM_TOPOLOGY, 4, SM_TOPOLOGY_MIN_SIZE, "SM topology 1734dc26");
        smTopologyRelease = smTopology == null ? null
                : slot(scratch, SM_TOPOLOGY, 13, SM_TOPOLOGY_MIN_SIZE, "SM topology 1734dc26");
    }

    private static Function slot(long scratch, byte[] uuid, int index, long minSize, String what) {
        try {
            Function getExportTable = NativeLibrary.getInstance("libcuda.so.1").getFunction("cuGetExportTable");
            long uuidAddress = scratch + 16;
            for (int i = 0; i < 16; i++) {
                UnsafeApi.putByte(uuidAddress + i, uuid[i]);
            }
            UnsafeApi.putLong(scratch, 0);
            int r = getExportTable.invokeInt(new Object[] {new Pointer(scratch), new Pointer(uuidAddress)});
            long table = UnsafeApi.getLong(scratch);
            if (r != CuResult.SUCCESS || table == 0) {
                LOG.error("the host driver does not hand out export table {} ({}): what guests ask of it is refused",
                        what, CuResult.name(r));
                return null;
            }
            long size = UnsafeApi.getLong(table);
            if (size < minSize) {
                LOG.error("the host driver's export table {} is {} bytes, expected at least {}: not used", what, size,
                        minSize);
                return null;
            }
            return Function.getFunction(new Pointer(UnsafeApi.getLong(table + 8L * index)));
        } catch (UnsatisfiedLinkError e) {
            LOG.error("the host driver has no cuGetExportTable ({}): export table {} is not available", e.toString(),
                    what);
            return null;
        }
    }

    /** → integrityLow, integrityHigh: the 16 bytes the real slot wrote, as two little-endian words. */
    int integrityCheck(Out o, int version, long unixSeconds) {
        if (integrityCheck == null) {
            return CuResult.NOT_SUPPORTED;
        }
        long answer = o.scratch + 64;
        UnsafeApi.setMemory(answer, GUARDED_BYTES, GUARD);
        int r = integrityCheck.invokeInt(new Object[] {version, unixSeconds, new Pointer(answer)});
        for (int i = ANSWER_BYTES; i < GUARDED_BYTES; i++) {
            if (UnsafeApi.getByte(answer + i) != GUARD) {
                LOG.error("the host driver's integrity check wrote more than {} bytes (byte {} changed): the layout in "
                        + "docs/export-tables.md is wrong; answering CUDA_ERROR_NOT_SUPPORTED", ANSWER_BYTES, i);
                return CuResult.NOT_SUPPORTED;
            }
        }
        o.integrityLow = UnsafeApi.getLong(answer);
        o.integrityHigh = UnsafeApi.getLong(answer + 8);
        return r;
    }

    /**
     * 1734dc26 slot 4, {@code CUresult (uint8_t **first, uint8_t **second)}: the driver hands out two
     * byte arrays of one entry per TPC (pair of SMs) of the current context's device — read from the
     * H200 trace: the first holds each TPC's GPC, the second its index within the GPC — and takes
     * them back with slot 13, {@code (first, second)}. Copies {@code entries} bytes of each to
     * {@code scratch + SM_TOPOLOGY_COPY} (first, then second) and gives them back at once.
     */
    int smTopology(long scratch, int entries) {
        if (smTopology == null || smTopologyRelease == null) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(scratch, 0);
        UnsafeApi.putLong(scratch + 8, 0);
        int r = smTopology.invokeInt(new Object[] {new Pointer(scratch), new Pointer(scratch + 8)});
        long first = UnsafeApi.getLong(scratch);
        long second = UnsafeApi.getLong(scratch + 8);
        if (r == CuResult.SUCCESS && first != 0 && second != 0) {
            if (SM_TOPOLOGY_SAID.compareAndSet(false, true)) {
                LOG.info("SM topology (export table 1734dc26): {} entries per array; the driver's allocations hold {}"
                        + " and {} bytes", entries, usableSize(first), usableSize(second));
            }
            UnsafeApi.copyMemory(first, scratch + SM_TOPOLOGY_COPY, entries);
            UnsafeApi.copyMemory(second, scratch + SM_TOPOLOGY_COPY + entries, entries);
        } else if (r == CuResult.SUCCESS) {
            r = CuResult.NOT_SUPPORTED; // nothing handed out: nothing to copy
        }
        if (first != 0 || second != 0) {
            smTopologyRelease.invokeInt(new Object[] {new Pointer(first), new Pointer(second)});
        }
        return r;
    }

    /** glibc's malloc_usable_size, for the one line that says how large the driver's arrays are (-1 if unknown). */
    private static long usableSize(long pointer) {
        try {
            return NativeLibrary.getInstance("c").getFunction("malloc_usable_size").invokeLong(new Object[] {new Pointer(pointer)});
        } catch (UnsatisfiedLinkError e) {
            return -1;
        }
    }
}
