package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.ExportCalls;
import io.ivcuda.server.gen.Reply;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Requests from the guest library's emulated export tables (docs/export-tables.md) for the few
 * slots only the host's real driver can answer. The guest passes scalars; the answers are the
 * driver's, copied out.
 */
final class ExportHandler implements ExportCalls {
    private static final Logger LOG = LogManager.getLogger(ExportHandler.class);
    private static final AtomicBoolean REFUSAL_LOGGED = new AtomicBoolean();

    private final Session session;

    ExportHandler(Session session) {
        this.session = session;
    }

    /** d4082055 slot 1: cudart's integrity check, asked of the real driver with the guest's arguments. */
    @Override
    public int ivc_export_integrity_check(Reply r, int version, long unixSeconds) {
        int result = session.cuda.exportIntegrityCheck(session.out, version, unixSeconds);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.integrityLow);
            r.set(1, session.out.integrityHigh);
        } else if (REFUSAL_LOGGED.compareAndSet(false, true)) {
            LOG.warn("channel {} pid {}: cudart's integrity check (export table d4082055) cannot be answered by {} → {}:"
                    + " runtime-API programs fail to initialise", session.index(), session.ownerPid(),
                    session.cuda.describe(), CuResult.name(result));
        }
        return result;
    }
}
