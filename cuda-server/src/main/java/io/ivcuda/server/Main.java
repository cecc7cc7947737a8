package io.ivcuda.server;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import sun.misc.Signal;

/**
 * {@code cuda-server [--config FILE]... [--set KEY=VALUE]...} (docs/architecture.md). Exit status 0
 * after SIGTERM, 2 for a configuration error, 1 for any other failure.
 */
@Command(name = "cuda-server", mixinStandardHelpOptions = true,
        description = "Serves one VM's CUDA driver calls from its ivshmem region.")
public final class Main implements Callable<Integer> {
    static final int EXIT_CONFIG = 2;
    static final int EXIT_FAILURE = 1;

    @Option(names = "--config", paramLabel = "FILE", description = "properties file; later files override earlier ones")
    List<Path> configs = new ArrayList<>();

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "overrides every file")
    List<String> sets = new ArrayList<>();

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setParameterExceptionHandler((e, a) -> {
            System.err.println("cuda-server: " + e.getMessage());
            return EXIT_CONFIG;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() {
        ServerConfig config;
        try {
            config = ServerConfig.load(configs, sets);
        } catch (ServerConfig.ConfigError e) {
            System.err.println("cuda-server: configuration error: " + e.getMessage());
            return EXIT_CONFIG;
        }
        Logger log = LogManager.getLogger(Main.class);
        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), s -> stop.countDown());
        Signal.handle(new Signal("INT"), s -> stop.countDown());
        CudaServer server;
        try {
            server = new CudaServer(config);
        } catch (IllegalArgumentException e) {
            System.err.println("cuda-server: configuration error: " + e.getMessage());
            return EXIT_CONFIG;
        }
        String[] why = {"signal"};
        server.whenVmLeaves(() -> {
            why[0] = "QEMU left";
            stop.countDown();
        });
        try {
            server.start();
            stop.await();
            log.info("stopping ({})", why[0]);
            server.close();
            return 0;
        } catch (Exception e) {
            log.error("cuda-server failed: {}", e.getMessage(), e);
            server.close();
            return EXIT_FAILURE;
        }
    }
}
