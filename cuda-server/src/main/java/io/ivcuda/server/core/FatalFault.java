package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * A fatal GPU fault of one guest process, and the VM's recovery from it (docs/architecture.md,
 * "Fault recovery"). CUDA documents a kernel's illegal address, failed device assert, illegal
 * instruction and their kin as leaving "the process in an inconsistent state": the process must be
 * terminated and relaunched. All of a VM's guest processes are served by one host process, this
 * server, and on the H200 every other context of such a process, and every new one, then answers
 * the same error. So the first call that answers one of these results <em>poisons</em> the VM, once:
 * every process that held state then keeps getting errors (natively only the faulting process
 * would), hellos are refused, and once every one of those processes is reclaimed (it exited, or was
 * found dead) the {@linkplain Recovery recovery action} runs, once, on a thread of its own: the
 * server replaces its CUDA process (plain mode) or says that only a restart of the VM helps
 * (doorbell mode). This mirrors what NVIDIA documents for MPS's own error containment.
 */
public final class FatalFault {
    private static final Logger LOG = LogManager.getLogger(FatalFault.class);

    /** The result of a hello refused while the server replaces its CUDA process: retry. */
    public static final int RESTARTING = CuResult.SYSTEM_NOT_READY;

    private final Map<Long, Owner> owners;
    /** The processes that held state when the fault came: the recovery waits for all to be reclaimed. */
    private final Set<Long> affected = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean recovering = new AtomicBoolean();
    private volatile String fault;
    private final Recovery recovery;

    /**
     * What runs once the VM is poisoned and every affected process was reclaimed.
     *
     * @param action        runs once, on a thread of its own (it may stop the server's workers and watcher)
     * @param cannotRestart null when the action replaces the CUDA process (plain mode): a refused hello is
     *                      then told to retry; else why it cannot (doorbell mode, past limit.recoveries),
     *                      which every refused hello is told with "restart the VM"
     */
    public record Recovery(Runnable action, String cannotRestart) {
        /** The action replaces the CUDA process. */
        public static Recovery restarting(Runnable action) {
            return new Recovery(action, null);
        }

        boolean restarts() {
            return cannotRestart == null;
        }
    }

    /**
     * @param owners   the VM's processes (a reclaimed one leaves the map)
     * @param recovery what follows a fault: given here, before any call can fault, so that no fault
     *                 finds the VM without it
     */
    public FatalFault(Map<Long, Owner> owners, Recovery recovery) {
        this.owners = owners;
        this.recovery = recovery;
    }

    /**
     * Whether {@code result} is one of cuda.h's results after which "the process must be terminated
     * and relaunched" (the sticky errors) and which so leave the CUDA process unusable.
     */
    public static boolean fatal(int result) {
        if (result < CuResult.ILLEGAL_ADDRESS || result > CuResult.LAUNCH_FAILED) {
            // the hot path: every call's result comes here. Under MPS another client's fatal fault
            // ends this client too (NVIDIA's MPS error containment): cuda.h says after 810 "the
            // process must be terminated and relaunched", so it is recovered from like a fault of
            // our own — without this a server whose neighbour faulted stayed unusable for good
            return result == CuResult.MPS_CLIENT_TERMINATED;
        }
        return switch (result) {
            case CuResult.ILLEGAL_ADDRESS, CuResult.LAUNCH_TIMEOUT, CuResult.ASSERT, CuResult.HARDWARE_STACK_ERROR,
                CuResult.ILLEGAL_INSTRUCTION, CuResult.MISALIGNED_ADDRESS, CuResult.INVALID_ADDRESS_SPACE,
                CuResult.INVALID_PC, CuResult.LAUNCH_FAILED -> true;
            default -> false;
        };
    }

    /** A call of the process {@code pid} answered {@code result}: the first fatal one poisons the VM. */
    public void observe(int pid, int opcode, int result) {
        if (!fatal(result) || fault != null) {
            return;
        }
        synchronized (this) {
            if (fault != null) {
                return;
            }
            // before the fault is published: a reclaim that finishes meanwhile checks after it
            affected.addAll(owners.keySet());
            // ASCII: it goes into the status file (ISO-8859-1) and the header's server_message
            fault = "pid " + pid + " " + Opcodes.name(opcode) + ": " + CuResult.name(result);
        }
        LOG.warn("fatal GPU fault: {}: the server's CUDA process is unusable (CUDA documents this error as "
                + "ending the process); {} guest process(es) held state and keep getting errors; new processes are "
                + "refused until they all exited, then {}", fault, affected.size(),
                recovery.restarts() ? "the server replaces its CUDA process (same pid, epoch + 1)"
                        : "nothing: " + recovery.cannotRestart() + ", restart the VM");
        check();
    }

    /** Whether a fatal fault poisoned the VM. */
    public boolean poisoned() {
        return fault != null;
    }

    /** The fault (pid, function, result), null if none. */
    public String fault() {
        return fault;
    }

    /** Whether the recovery action started (the server is replacing its CUDA process). */
    public boolean recovering() {
        return recovering.get();
    }

    /** The affected processes not reclaimed yet. */
    public int waitingFor() {
        affected.removeIf(t -> !owners.containsKey(t));
        return affected.size();
    }

    /**
     * Why a hello is refused now (null: it is not): while poisoned no process gets a session in
     * this CUDA process — it would get nothing but errors.
     */
    public String helloRefusal() {
        String f = fault;
        if (f == null) {
            return null;
        }
        return recovery.restarts()
                ? "a fatal GPU fault (" + f + ") made the server's CUDA process unusable; it restarts once the "
                    + "processes that held state exited; retry"
                : "a fatal GPU fault (" + f + ") made the server's CUDA process unusable and " + recovery.cannotRestart()
                    + ": restart the VM";
    }

    /** The result of a refused hello: retry (plain mode) or not (doorbell mode). */
    public int helloResult() {
        return recovery.restarts() ? RESTARTING : CuResult.NOT_INITIALIZED;
    }

    /** The server stops: no recovery starts any more (the stop's own reclaims must not start one). */
    public void closing() {
        recovering.set(true);
    }

    /** A process's reclaim finished (it left the VM's owners): the recovery may be due. */
    public void reclaimed(long token) {
        if (fault != null) {
            check();
        }
    }

    private void check() {
        if (waitingFor() != 0 || !recovering.compareAndSet(false, true)) {
            return;
        }
        Thread t = new Thread(recovery.action(), "recovery");
        t.setDaemon(false); // the process's exit must not cut it short
        t.start();
    }
}
