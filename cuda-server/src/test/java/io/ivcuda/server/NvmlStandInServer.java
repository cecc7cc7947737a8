package io.ivcuda.server;

import java.util.List;

/**
 * TEST ONLY: a cuda-server process whose backend is the host-memory backend with
 * {@link NvmlHandlerTest.StandInNvml}'s answers for the host's NVML, so that tests/xlang/run.sh can
 * drive the guest's libnvidia-ml.so.1 (and ivcuda-smi) through libcuda's real transport to a real
 * server: what it checks are the server's own figures (the VM's quota as NVML memory, the VM's
 * processes) and the guest library's handling of them, never NVML's — the stand-in is no GPU.
 *
 * <p>usage: java -cp cuda-server/target/test-classes:cuda-server/target/cuda-server.jar
 * io.ivcuda.server.NvmlStandInServer KEY=VALUE... (the server's keys; backend=host-memory is implied).
 * Runs until SIGTERM.
 */
final class NvmlStandInServer {
    private NvmlStandInServer() {
    }

    public static void main(String[] args) throws Exception {
        List<String> sets = new java.util.ArrayList<>(List.of(args));
        sets.add("backend=host-memory");
        CudaServer server = new CudaServer(ServerConfig.load(List.of(), sets), new NvmlHandlerTest.StandInNvml());
        server.start();
        Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        Thread.currentThread().join();
    }
}
