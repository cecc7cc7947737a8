package io.ivcuda.server;

import io.ivcuda.server.doorbell.IvshmemRelay;
import io.ivcuda.server.doorbell.IvshmemServer;
import io.ivcuda.server.doorbell.NativeFiles;
import io.ivcuda.server.doorbell.SlotPeerRoles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import sun.misc.Signal;

/**
 * {@code ivcuda-server relay ...}: the ivshmem server of one back-end service slot in doorbell mode, which connects
 * the back-end's QEMU and the front-end's QEMU (docs/backend-domains.md, "Doorbell mode through a back-end").
 * The host's hook starts it before either QEMU and stops it once neither runs. Exit 0 after SIGTERM, 1 when it
 * cannot listen, 2 for wrong arguments.
 */
@Command(name = "relay", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, usageHelpAutoWidth = true,
        header = "The ivshmem server of a back-end domain's service slot in doorbell mode: connects both domains' QEMUs.",
        description = {"Started by the libvirt hook (50-ivcuda) for each slot of a back-end domain whose element says "
                + "mode='doorbell'; it hands both QEMUs the slot's region and each the other's interrupt eventfds (the "
                + "back-end's slot device is peer 0, the front-end peer 1), and tells each when the other leaves or comes "
                + "back. Not meant to be started by hand except for tests."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0: stopped by SIGTERM or SIGINT", "1: cannot listen or open the region", "2: wrong arguments"})
final class RelayCommand implements Callable<Integer> {

    @Option(names = "--socket", required = true, paramLabel = "PATH", description = "where both QEMUs connect (<server path>)")
    Path socket;

    @Option(names = "--region", required = true, paramLabel = "FILE", description = "the slot's region file")
    Path region;

    @Option(names = "--vectors", required = true, paramLabel = "N", description = "the devices' <msi vectors> (1..64)")
    int vectors;

    @Option(names = "--backend-uuid", required = true, paramLabel = "UUID", description = "the back-end domain's UUID: its QEMU is peer 0")
    String backendUuid;

    @Option(names = "--control", required = true, paramLabel = "FILE",
            description = "the back-end's control region: the front-end it gives the slot to is peer 1")
    Path control;

    @Option(names = "--slot", required = true, paramLabel = "K", description = "the slot's index")
    int slot;

    @Option(names = "--peer-uid", paramLabel = "UID", defaultValue = "-1", description = "the uid both QEMUs run as (-1: any)")
    int peerUid;

    @Option(names = "--pidfile", paramLabel = "FILE", description = "written once listening, removed at the end")
    Path pidfile;

    @Option(names = "--peers", paramLabel = "FILE",
            description = "who is connected, a line PEER PID UID each, rewritten at every change, removed at the end")
    Path peers;

    @Override
    public Integer call() {
        Logger log = LogManager.getLogger(RelayCommand.class);
        if (slot < 0 || slot >= io.ivcuda.common.GpuElement.MAX_SLOTS) {
            System.err.println(Main.SAYS + "--slot must be 0.." + (io.ivcuda.common.GpuElement.MAX_SLOTS - 1) + ", not " + slot);
            return Main.EXIT_CONFIG;
        }
        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), s -> stop.countDown());
        Signal.handle(new Signal("INT"), s -> stop.countDown());
        int regionFd;
        try {
            regionFd = NativeFiles.openReadWrite(region);
        } catch (RuntimeException e) {
            System.err.println(Main.SAYS + "cannot open the slot region " + region + ": " + e.getMessage());
            return Main.EXIT_FAILURE;
        }
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, vectors,
                new SlotPeerRoles(peerUid, backendUuid, control, slot))) {
            IvshmemServer.shareSocketWithGroupOf(socket, region);
            if (peers != null) {
                relay.recordPeers(peers);
            }
            if (pidfile != null) {
                Files.writeString(pidfile, ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
            }
            log.info("relay of slot {} of back-end {}: ready on {}", slot, backendUuid, socket);
            stop.await();
            log.info("relay of slot {} of back-end {}: stopping (signal)", slot, backendUuid);
            return 0;
        } catch (IllegalArgumentException e) {
            System.err.println(Main.SAYS + e.getMessage());
            return Main.EXIT_CONFIG;
        } catch (Exception e) {
            System.err.println(Main.SAYS + "relay on " + socket + " failed: " + e.getMessage());
            return Main.EXIT_FAILURE;
        } finally {
            NativeFiles.close(regionFd);
            if (pidfile != null) {
                try {
                    Files.deleteIfExists(pidfile);
                } catch (java.io.IOException e) {
                    log.warn("cannot remove {}: {}", pidfile, e.getMessage());
                }
            }
        }
    }
}
