package io.ivcuda.server.integrity;

/**
 * Where an oracle's driver has what cudart's integrity check covers: tables 6bd5fb6c (the CUDART
 * interface) and d4082055 with their sizes in bytes, and d4082055's slot-1 function. The guest
 * places its copies of the two tables, and a jump to its own slot-1 handler, at exactly these
 * addresses. Only the oracle chooses them: the guest never names an address the server maps.
 */
public record Placement(long cudartTable, long cudartBytes, long integrityTable, long integrityBytes,
                        long integritySlot1) {

    /** Lowest and highest (exclusive) addresses a placement may use: user space on x86-64, above the first pages. */
    static final long USER_BOTTOM = 0x10000L;
    static final long USER_TOP = 0x7fff_ffff_f000L;
    static final long MAX_TABLE_BYTES = 4096;

    /** The oracle's report is plausible: in user space, sized as a table can be. */
    boolean plausible() {
        return inUserSpace(cudartTable, cudartBytes) && inUserSpace(integrityTable, integrityBytes)
                && inUserSpace(integritySlot1, 16) && cudartBytes >= 16 && integrityBytes >= 16
                && cudartBytes <= MAX_TABLE_BYTES && integrityBytes <= MAX_TABLE_BYTES
                && cudartTable % 8 == 0 && integrityTable % 8 == 0;
    }

    @Override
    public String toString() {
        return String.format("6bd5fb6c at %x (%d bytes), d4082055 at %x (%d bytes), its slot 1 at %x", cudartTable,
                cudartBytes, integrityTable, integrityBytes, integritySlot1);
    }

    private static boolean inUserSpace(long address, long bytes) {
        return address >= USER_BOTTOM && address < USER_TOP && bytes >= 0 && bytes <= USER_TOP - address;
    }
}
