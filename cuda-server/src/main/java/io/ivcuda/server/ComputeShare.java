package io.ivcuda.server;

import io.ivcuda.common.Backend;
import io.ivcuda.common.MpsEnvironment;
import io.ivcuda.common.MpsFallback;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import java.util.Map;

/**
 * Whether this server holds its VM to its compute share ({@code compute.share}, docs/sharing.md). The share is
 * NVIDIA's MPS's to enforce, not ours: the server must have been started as an MPS client with the share in
 * {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE}, and the driver must say that MPS serves the device
 * ({@code CU_DEVICE_ATTRIBUTE_MPS_ENABLED}) — without a control daemon the driver runs without MPS and says
 * nothing, so asking is the only way to know. A share that is not enforced is refused or, with
 * {@code mps.unavailable=unshared}, the VM runs with the whole GPU and every status says so.
 *
 * @param state   what the VM gets
 * @param share   the configured share (percent of the SMs)
 * @param problem why MPS does not enforce it, or null
 */
record ComputeShare(State state, int share, String problem) {
    /** {@code CU_DEVICE_ATTRIBUTE_MPS_ENABLED} (cuda.h): contexts created on the device are shared via MPS. */
    static final int CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 133;

    enum State {
        /** compute.share = 100: no MPS, as without sharing. */
        WHOLE_GPU("whole-gpu"),
        /** MPS holds the server's contexts to the share. */
        ENFORCED("mps"),
        /** The share could not be enforced and mps.unavailable=unshared: the whole GPU. */
        UNSHARED("unshared"),
        /** The share could not be enforced and mps.unavailable=refuse: the server does not start. */
        REFUSED("refused");

        /** The status file's {@code compute.share.state}. */
        final String word;

        State(String word) {
            this.word = word;
        }
    }

    /** The one line a refusing server prints after "ivcuda-server: " (the hook shows it first). */
    String refusal() {
        return "compute share " + share + " % cannot be enforced: " + problem
                + " (docs/sharing.md; mps.unavailable=unshared runs the VM with the whole GPU instead)";
    }

    /**
     * Decides, after {@code cuda.init} succeeded (Main's GPU check): {@code cuda} is null for the host-memory
     * backend, which has no GPU and so no MPS.
     */
    static ComputeShare check(ServerConfig config, CudaBackend cuda, Map<String, String> environment) {
        int share = config.computeShare();
        if (share >= 100) {
            return new ComputeShare(State.WHOLE_GPU, share, null);
        }
        String problem = problem(config, cuda, environment);
        if (problem == null) {
            return new ComputeShare(State.ENFORCED, share, null);
        }
        return new ComputeShare(config.mpsUnavailable() == MpsFallback.UNSHARED ? State.UNSHARED : State.REFUSED, share,
                problem);
    }

    private static String problem(ServerConfig config, CudaBackend cuda, Map<String, String> environment) {
        if (config.backend() != Backend.CUDA || cuda == null) {
            return "the " + config.backend().word() + " backend has no GPU, so no MPS";
        }
        String percentage = environment.get(MpsEnvironment.ACTIVE_THREAD_PERCENTAGE);
        if (!Integer.toString(config.computeShare()).equals(percentage)) {
            return "the server was started without the MPS environment (" + MpsEnvironment.ACTIVE_THREAD_PERCENTAGE + " is "
                    + (percentage == null ? "unset" : "'" + percentage + "'") + "; the hook's runtime.dir/UUID.env sets it)";
        }
        Out out = cuda.newOut();
        try {
            int ordinal = DriverSession.ordinalOf(cuda, config.gpu(), out);
            if (ordinal < 0 || cuda.deviceGet(out, ordinal) != CuResult.SUCCESS) {
                return "no GPU " + config.gpu() + " to ask whether MPS serves it";
            }
            int device = out.value;
            int result = cuda.deviceGetAttribute(out, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, device);
            if (result != CuResult.SUCCESS) {
                return "the driver does not say whether MPS serves GPU " + config.gpu() + " (" + CuResult.name(result) + ")";
            }
            if (out.value == 0) {
                String pipe = environment.getOrDefault(MpsEnvironment.PIPE_DIRECTORY, "/tmp/nvidia-mps");
                return "MPS does not serve this process: is the MPS control daemon running with " + MpsEnvironment.PIPE_DIRECTORY
                        + "=" + pipe + " (systemctl status ivcuda-mps, or its log in " + environment.getOrDefault(
                        MpsEnvironment.LOG_DIRECTORY, "/var/log/nvidia-mps") + ")?";
            }
            return null;
        } finally {
            out.free();
        }
    }
}
