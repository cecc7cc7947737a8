package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import org.agrona.UnsafeApi;
import io.ivcuda.server.gen.ExportCalls;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.integrity.Placement;
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
    private static final AtomicBoolean TOPOLOGY_REFUSAL_LOGGED = new AtomicBoolean();

    /** Where a guest's thread descriptor (pthread_self()) can be: x86-64 user space above its first 2 MiB (as the oracle checks), 64-byte aligned. */
    static final long THREAD_BOTTOM = 0x20_0000L;
    static final long THREAD_TOP = 0x7fff_ffff_f000L;
    static final long THREAD_ALIGN = 64;

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
    /**
     * Where the process's integrity oracle has tables 6bd5fb6c and d4082055 and d4082055's slot-1
     * function (its oracle started now if it has none): the guest places its copies there.
     * NOT_SUPPORTED without an oracle (logged once per process by the oracles); the guest then
     * keeps its own tables and asks through opcode 270.
     */
    @Override
    public int ivc_integrity_oracle(Reply r) {
        Placement p = session.vm.integrity().placement(session.token(), session.owner().pid());
        if (p == null) {
            return CuResult.NOT_SUPPORTED;
        }
        r.set(0, p.cudartTable());
        r.set(1, p.cudartBytes());
        r.set(2, p.integrityTable());
        r.set(3, p.integrityBytes());
        r.set(4, p.integritySlot1());
        return CuResult.SUCCESS;
    }

    /**
     * d4082055 slot 1 answered by the process's oracle from a thread at {@code thread} — the guest
     * declares it, so it must be a place a thread descriptor can be (user space, glibc's 64-byte
     * alignment); the oracle maps nothing over its own memory for it either.
     */
    @Override
    public int ivc_integrity_answer(Reply r, int version, long unixSeconds, long thread) {
        if (thread < THREAD_BOTTOM || thread >= THREAD_TOP || thread % THREAD_ALIGN != 0) {
            return session.refuse("thread", "0x" + Long.toHexString(thread) + " is no thread descriptor in user space",
                    CuResult.INVALID_VALUE);
        }
        long[] answer = session.vm.integrity().answer(session.token(), session.owner().pid(), version, unixSeconds,
                thread);
        if (answer == null) {
            return CuResult.NOT_SUPPORTED;
        }
        r.set(0, answer[0]);
        r.set(1, answer[1]);
        return CuResult.SUCCESS;
    }

    /**
     * 1734dc26 slot 4: the SM topology of the device as the server's driver hands it out (two
     * arrays of one byte per TPC), for cuBLASLt's nvjet kernels. Without it cuBLASLt takes other
     * kernels, so a backend that has none answers NOT_SUPPORTED (said once).
     */
    @Override
    public int ivc_sm_topology(Reply r, int capacity) {
        int result = session.cuda.smTopology(session.out);
        if (result != CuResult.SUCCESS) {
            if (TOPOLOGY_REFUSAL_LOGGED.compareAndSet(false, true)) {
                LOG.info("channel {} pid {}: the SM topology (export table 1734dc26) cannot be answered by {} → {}:"
                        + " cuBLASLt uses other kernels than its nvjet ones", session.index(), session.ownerPid(),
                        session.cuda.describe(), CuResult.name(result));
            }
            return result;
        }
        int entries = session.out.value;
        if (r.outbufCapacity() < 2 * entries) {
            return session.refuse("capacity", capacity + " bytes for two arrays of " + entries, CuResult.INVALID_VALUE);
        }
        long from = session.out.scratch + CudaBackend.SM_TOPOLOGY_OFFSET;
        for (int i = 0; i < 2 * entries; i++) {
            r.buffer().putByte(r.outbufIndex() + i, UnsafeApi.getByte(from + i));
        }
        r.outbufLength(2 * entries);
        r.set(0, entries);
        return CuResult.SUCCESS;
    }
}
