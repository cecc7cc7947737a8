package io.ivcuda.server.handler;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.SessionCalls;
import io.ivcuda.wire.HeaderFlyweight;
import java.nio.charset.StandardCharsets;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/** A channel's first and last call (docs/protocol.md §3, §9), and a process's exit (§7). */
final class SessionHandler implements SessionCalls {
    private static final Logger LOG = LogManager.getLogger(SessionHandler.class);

    private final Session session;

    SessionHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_hello(Reply r, int protocolVersion, long apiHash, int pid, int tid, String libraryVersion,
                         int messageCapacity) {
        r.set(0, HeaderFlyweight.PROTOCOL_VERSION);
        r.set(1, Opcodes.API_HASH);
        r.set(2, session.vm.hostDriverVersion());
        String problem = null;
        if (protocolVersion != HeaderFlyweight.PROTOCOL_VERSION) {
            problem = "guest speaks protocol " + protocolVersion + ", server speaks " + HeaderFlyweight.PROTOCOL_VERSION;
        } else if (apiHash != Opcodes.API_HASH) {
            problem = "guest API hash " + Long.toHexString(apiHash) + ", server API hash " + Long.toHexString(Opcodes.API_HASH);
        }
        if (problem != null) {
            String message = problem + " — install matching ivcuda-guest and ivcuda-host";
            session.vm.refusals().log(LOG, org.apache.logging.log4j.Level.WARN, "ivc_hello refused", () -> "channel "
                    + session.index() + " pid " + pid + " ivc_hello: refused: " + message + " (library " + libraryVersion + ")");
            return refused(r, message, CuResult.NOT_INITIALIZED);
        }
        String restarting = session.vm.fatalFault().helloRefusal();
        if (restarting != null) {
            // no session in a CUDA process a fatal fault made unusable: it would answer nothing but errors
            int result = session.vm.fatalFault().helloResult();
            session.warn("token", restarting, result);
            return refused(r, restarting, result);
        }
        if (!session.greet()) {
            String message = session.vm.owners().size() >= session.vm.limits().processes()
                    ? "the server holds " + ServerKeys.LIMIT_PROCESSES.name() + " " + session.vm.limits().processes() + " processes of this VM"
                    : "this process exited or was found dead: the server reclaimed it, its CUDA state is gone";
            session.warn("token", message, CuResult.NOT_INITIALIZED);
            return refused(r, message, CuResult.NOT_INITIALIZED);
        }
        // a line per guest thread, and a guest decides how many threads: counted, a few a minute logged
        session.vm.refusals().log(LOG, org.apache.logging.log4j.Level.INFO, "ivc_hello", () -> "channel "
                + session.index() + " pid " + pid + " tid " + tid + ": hello from library " + libraryVersion);
        return CuResult.SUCCESS;
    }

    /** A refused hello carries its message (§4), for the guest library to show. */
    private static int refused(Reply r, String message, int result) {
        byte[] b = message.getBytes(StandardCharsets.US_ASCII);
        int n = Math.min(b.length, r.outbufCapacity() - 1);
        if (n > 0) {
            r.buffer().putBytes(r.outbufIndex(), b, 0, n);
            r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
            r.outbufLength(n + 1);
        }
        return result;
    }

    @Override
    public int ivc_goodbye(Reply r) {
        session.cuda.ctxSetCurrent(0);
        session.close();
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_process_exit(Reply r) {
        session.close();
        session.reclaimer.reclaim(session.token(), session.index());
        return CuResult.SUCCESS;
    }
}
