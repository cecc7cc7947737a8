package io.ivcuda.server.core;

import io.ivcuda.common.config.ConfigKey;
import io.ivcuda.common.config.ServerKeys;

/**
 * What one VM's guest may grow on the server (docs/threat-model.md, "Limits"); each is a
 * configuration key. A request beyond a limit gets a CUDA error (CUDA_ERROR_OUT_OF_MEMORY unless
 * said otherwise) and one log line per kind of refusal, never an exception.
 *
 * @param handlesPerProcess  handles (contexts, modules, functions, streams, events, …) one guest
 *                           process may hold ({@code limit.handles.process})
 * @param handlesPerVm       handles the VM's processes may hold together ({@code limit.handles.vm})
 * @param allocationsPerProcess device allocations one process may hold ({@code limit.allocations.process})
 * @param processes          guest processes the server keeps state for at once ({@code limit.processes});
 *                           a hello beyond it is refused with CUDA_ERROR_NOT_INITIALIZED
 * @param imageBytes         bytes of module images the server holds for the VM, kept and in transit
 *                           together, checked before any is allocated ({@code limit.module.image.bytes})
 * @param refusalLinesPerKind log lines per kind of refusal per {@code refusalWindowMs}; the rest are
 *                           counted, and said in the next line of that kind ({@code log.refusals.per.kind})
 * @param refusalWindowMs    the window of that limit ({@code log.refusals.window.ms})
 * @param recoveries         replacements of the server's CUDA process after fatal GPU faults within
 *                           {@code recoveriesWindowMs} ({@code limit.recoveries}): a guest that faults on
 *                           purpose costs the host a JVM and driver start each time, and, under MPS, the
 *                           other VMs on the GPU their CUDA work (docs/sharing.md)
 * @param recoveriesWindowMs the window of that limit ({@code limit.recoveries.window.ms})
 * @param deviceOutputBytes  device printf output one process may have waiting ({@code limit.device.output.bytes});
 *                           the rest is dropped and counted, and the guest says how much on stderr
 * @param jitLogBytes        bytes of each JIT log buffer the server gives the driver ({@code limit.jit.log.bytes})
 * @param jitLogBytesPerProcess JIT log bytes one process's live link states hold together
 *                           ({@code limit.jit.log.bytes.process}); checked before cuLinkCreate
 * @param jitLogBytesPerVm   the same for the VM's processes together ({@code limit.jit.log.bytes.vm})
 * @param hostFunctionsPerProcess host functions one process may have waiting on the server at once
 *                           ({@code limit.host.functions.process}): queued on streams and not yet run,
 *                           graph host nodes, staged copies' completions ({@link HostCalls} targets)
 */
public record Limits(int handlesPerProcess, int handlesPerVm, int allocationsPerProcess, int processes,
                     long imageBytes, int refusalLinesPerKind, long refusalWindowMs, int recoveries,
                     long recoveriesWindowMs, int deviceOutputBytes, int jitLogBytes,
                     long jitLogBytesPerProcess, long jitLogBytesPerVm, int hostFunctionsPerProcess) {

    /** The defaults: those of the keys' declarations (common's ServerKeys). */
    public static final Limits DEFAULT = new Limits(intDefault(ServerKeys.LIMIT_HANDLES_PROCESS),
            intDefault(ServerKeys.LIMIT_HANDLES_VM), intDefault(ServerKeys.LIMIT_ALLOCATIONS_PROCESS),
            intDefault(ServerKeys.LIMIT_PROCESSES), ServerKeys.LIMIT_MODULE_IMAGE_BYTES.defaultValue(),
            intDefault(ServerKeys.LOG_REFUSALS_PER_KIND), ServerKeys.LOG_REFUSALS_WINDOW_MS.defaultValue(),
            intDefault(ServerKeys.LIMIT_RECOVERIES), ServerKeys.LIMIT_RECOVERIES_WINDOW_MS.defaultValue(),
            intDefault(ServerKeys.LIMIT_DEVICE_OUTPUT_BYTES), intDefault(ServerKeys.LIMIT_JIT_LOG_BYTES),
            ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS.defaultValue(), ServerKeys.LIMIT_JIT_LOG_BYTES_VM.defaultValue(),
            intDefault(ServerKeys.LIMIT_HOST_FUNCTIONS_PROCESS));

    private static int intDefault(ConfigKey<Long> key) {
        return Math.toIntExact(key.defaultValue());
    }
}
