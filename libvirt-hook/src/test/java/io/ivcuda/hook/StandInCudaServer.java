package io.ivcuda.hook;

import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.Reader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * TEST STAND-IN for cuda-server, never part of the product: it honours only the parts of the
 * command-line contract (docs/architecture.md) that the hook relies on — {@code --config} files in
 * order, {@code --set}, exit 2 on a configuration error, a READY header in {@code region.path}, the
 * pidfile, a new epoch in the header each start, and exit 0 on SIGTERM. Used by the hook's unit tests and, only when explicitly selected
 * ({@code IVCUDA_IT_SERVER=standin}), by the lifecycle integration test.
 * The test-only key {@code standin.behaviour} = {@code ready} (default), {@code exit} (dies before
 * ready) or {@code hang} (never ready) lets tests provoke the hook's failure paths.
 */
public final class StandInCudaServer {
    private StandInCudaServer() {
    }

    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--config") && i + 1 < args.length) {
                try (Reader reader = Files.newBufferedReader(Path.of(args[++i]), StandardCharsets.ISO_8859_1)) {
                    config.load(reader);
                } catch (IOException e) {
                    System.err.println("stand-in: cannot read --config " + args[i] + ": " + e.getMessage());
                    System.exit(2);
                }
            } else if (args[i].equals("--set") && i + 1 < args.length) {
                String[] kv = args[++i].split("=", 2);
                config.setProperty(kv[0], kv.length > 1 ? kv[1] : "");
            } else {
                System.err.println("stand-in: unknown argument " + args[i]);
                System.exit(2);
            }
        }
        String regionPath = config.getProperty("region.path");
        if (regionPath == null) {
            System.err.println("stand-in: region.path is required");
            System.exit(2);
        }
        long size = Long.parseLong(config.getProperty("region.size", "268435456").trim());
        String behaviour = config.getProperty("standin.behaviour", "ready").trim();
        System.err.println("stand-in: starting for " + config.getProperty("domain.name") + " behaviour " + behaviour);
        // what the launcher put into the environment for MPS (docs/sharing.md): the hook's tests read it here
        new java.util.TreeMap<>(System.getenv()).forEach((k, v) -> {
            if (k.startsWith("CUDA_MPS_")) {
                System.err.println("stand-in: env " + k + "=" + v);
            }
        });
        if (behaviour.equals("exit")) {
            System.err.println("stand-in: failing on purpose before ready");
            System.exit(1);
        }
        if (behaviour.equals("nogpu")) {
            // what the real server says and does on a host without a usable GPU (cuda-server Main)
            System.err.println("ivcuda-server: no usable GPU (gpu 0): cuInit failed: CUDA_ERROR_NO_DEVICE (the driver finds no GPU)");
            System.exit(3);
        }
        if (behaviour.equals("hang")) {
            Thread.sleep(Long.MAX_VALUE);
        }
        Path pidfile = config.getProperty("pidfile") == null ? null : Path.of(config.getProperty("pidfile"));
        try (RandomAccessFile region = new RandomAccessFile(regionPath, "rw")) {
            if (region.length() != 0 && region.length() != size) {
                System.err.println("stand-in: region.path " + regionPath + " has size " + region.length() + ", expected " + size);
                System.exit(2);
            }
            region.setLength(size);
            // a new epoch, as the real server writes one (the hook tells a restarted server's READY by it)
            ByteBuffer previous = ByteBuffer.allocate(HeaderFlyweight.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            region.seek(0);
            region.readFully(previous.array());
            int epoch = previous.getLong(HeaderFlyweight.MAGIC_OFFSET) == HeaderFlyweight.MAGIC
                    ? previous.getInt(HeaderFlyweight.EPOCH_OFFSET) + 1 : 1;
            // Agrona's buffers need --add-exports on the command line: a plain ByteBuffer at the generated offsets
            ByteBuffer header = ByteBuffer.allocate(HeaderFlyweight.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            header.putLong(HeaderFlyweight.MAGIC_OFFSET, HeaderFlyweight.MAGIC);
            header.putInt(HeaderFlyweight.PROTOCOL_VERSION_OFFSET, HeaderFlyweight.PROTOCOL_VERSION);
            header.putInt(HeaderFlyweight.HEADER_SIZE_OFFSET, HeaderFlyweight.LENGTH);
            header.putLong(HeaderFlyweight.REGION_SIZE_OFFSET, size);
            header.putInt(HeaderFlyweight.EPOCH_OFFSET, epoch);
            header.putLong(HeaderFlyweight.CHANNEL_TABLE_OFFSET_OFFSET, HeaderFlyweight.LENGTH);
            header.putLong(HeaderFlyweight.POOL_OFFSET_OFFSET, size / 2); // the pool: the second half of the region
            header.putLong(HeaderFlyweight.POOL_SIZE_OFFSET, size / 2);
            region.seek(0);
            region.write(header.array());
            // server_state last, as the protocol demands.
            region.seek(HeaderFlyweight.SERVER_STATE_OFFSET);
            region.write(new byte[] {HeaderFlyweight.STATE_READY, 0, 0, 0});
        }
        if (pidfile != null) {
            Files.writeString(pidfile, ProcessHandle.current().pid() + "\n");
        }
        System.err.println("stand-in: READY");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                if (pidfile != null) {
                    Files.deleteIfExists(pidfile);
                }
            } catch (IOException e) {
                // exiting anyway
            }
        }));
        Thread.sleep(Long.MAX_VALUE);
    }
}
