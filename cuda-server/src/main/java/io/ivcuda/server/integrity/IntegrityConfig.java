package io.ivcuda.server.integrity;

import java.nio.file.Path;

/**
 * How the server answers cudart's integrity check through oracles (docs/export-tables.md,
 * "d4082055"; docs/threat-model.md, "The integrity oracle").
 *
 * @param oracle    the ivcuda-integrity-oracle program ({@code integrity.oracle})
 * @param driver    the driver the oracles load ({@code integrity.driver}), as dlopen takes it
 * @param oracles   oracles alive at once for the VM, one per guest process that asked
 *                  ({@code integrity.oracles}); 0: none, every process gets opcode 270's answer
 * @param timeoutMs the longest an oracle may take to start (cuInit) or to answer
 *                  ({@code integrity.timeout.ms}); one that takes longer is killed
 */
public record IntegrityConfig(Path oracle, String driver, int oracles, int timeoutMs) {

    /** No oracles: a VM before the server attaches its own (the keys' defaults: common's ServerKeys). */
    public static final IntegrityConfig NONE = new IntegrityConfig(Path.of("/nonexistent"), "libcuda.so.1", 0, 30_000);
}
