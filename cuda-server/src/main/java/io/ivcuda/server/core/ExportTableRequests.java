package io.ivcuda.server.core;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Reply;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Requests from the guest library's emulated export tables (docs/export-tables.md) for the few
 * slots only the host's real driver can answer. The guest passes scalars; the answers are the
 * driver's, copied out.
 */
final class ExportTableRequests {
    private static final Logger LOG = LogManager.getLogger(ExportTableRequests.class);
    private static final AtomicBoolean REFUSAL_LOGGED = new AtomicBoolean();

    private final CudaBackend cuda;
    private final Out out;

    ExportTableRequests(CudaBackend cuda, Out out) {
        this.cuda = cuda;
        this.out = out;
    }

    /** d4082055 slot 1: cudart's integrity check, asked of the real driver with the guest's arguments. */
    int integrityCheck(Reply r, ChannelWorker worker, int version, long unixSeconds) {
        int result = cuda.exportIntegrityCheck(out, version, unixSeconds);
        if (result == CuResult.SUCCESS) {
            r.set(0, out.l0);
            r.set(1, out.l1);
        } else if (REFUSAL_LOGGED.compareAndSet(false, true)) {
            LOG.warn("channel {} pid {}: cudart's integrity check (export table d4082055) cannot be answered by {} → {}:"
                    + " runtime-API programs fail to initialise", worker.index(), worker.ownerPid(), cuda.describe(),
                    CuResult.name(result));
        }
        return result;
    }
}
