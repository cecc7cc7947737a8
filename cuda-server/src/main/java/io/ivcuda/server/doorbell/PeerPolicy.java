package io.ivcuda.server.doorbell;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Decides whether a connecting process may become this VM's peer: only the one QEMU of
 * our domain. The kernel's credentials cannot be forged; the command line check ties the
 * process to the domain (libvirt starts QEMU with {@code -uuid <domain uuid>}).
 *
 * @param uid          the uid QEMU runs as, or -1 for any
 * @param domainUuid   the domain's UUID that QEMU's command line must carry, or null
 */
public record PeerPolicy(int uid, String domainUuid) {

    public static final PeerPolicy ANY = new PeerPolicy(-1, null);

    /** @return empty when allowed, else why not (for the log) */
    public Optional<String> refusal(PeerCredentials peer) {
        if (uid >= 0 && peer.uid() != uid) {
            return Optional.of("peer pid " + peer.pid() + " runs as uid " + peer.uid() + ", expected " + uid);
        }
        if (domainUuid != null) {
            List<String> args;
            try {
                byte[] raw = Files.readAllBytes(Path.of("/proc", Integer.toString(peer.pid()), "cmdline"));
                args = Arrays.asList(new String(raw, StandardCharsets.UTF_8).split("\0"));
            } catch (IOException e) {
                return Optional.of("cannot read the command line of peer pid " + peer.pid() + ": " + e.getMessage());
            }
            int at = args.indexOf("-uuid");
            if (at < 0 || at + 1 >= args.size() || !args.get(at + 1).equalsIgnoreCase(domainUuid)) {
                return Optional.of("peer pid " + peer.pid() + " is not the QEMU of domain " + domainUuid);
            }
        }
        return Optional.empty();
    }
}
