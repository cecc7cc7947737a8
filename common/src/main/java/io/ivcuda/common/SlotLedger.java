package io.ivcuda.common;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Which front-end domain holds which slot of which back-end domain (docs/backend-domains.md): the one
 * authority for it, since a clone carries its original's slot device and so the devices alone cannot
 * tell. One line per assignment, {@code <backend uuid> <slot> <frontend uuid> <frontend name>}, in
 * {@code state.dir/backend-slots}. Only the provisioner writes it, under a lock and by renaming a complete
 * new file over the old one, so a reader (the hook) never sees half a change and needs no lock.
 */
public final class SlotLedger {
    /** The ledger's file name in {@code state.dir}. */
    public static final String FILE_NAME = "backend-slots";

    /** One assignment; the name is for people reading the file and messages, the UUIDs decide. */
    public record Assignment(String backendUuid, int slot, String frontendUuid, String frontendName) {
        public Assignment {
            if (!DomainXml.isUuid(backendUuid) || !DomainXml.isUuid(frontendUuid) || slot < 0 || slot >= GpuElement.MAX_SLOTS) {
                throw new IllegalArgumentException("not an assignment: " + backendUuid + " " + slot + " " + frontendUuid);
            }
            frontendName = oneWord(frontendName);
        }

        String line() {
            return backendUuid + " " + slot + " " + frontendUuid + " " + frontendName;
        }
    }

    /** A file lock is the process's, not a thread's (a second lock in one JVM throws): threads queue here first. */
    private static final Object IN_PROCESS = new Object();

    private final Path file;

    public SlotLedger(Path file) {
        this.file = file;
    }

    public static SlotLedger of(HostConfig host) {
        return new SlotLedger(host.stateDir().resolve(FILE_NAME));
    }

    public Path file() {
        return file;
    }

    /** The assignments as the file says now; no file is no assignment. */
    public List<Assignment> read() throws IvcudaConfigException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new IvcudaConfigException("cannot read the back-end slot ledger " + file + ": " + e.getMessage(), e);
        }
        List<Assignment> result = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] words = line.split(" ", 4);
            try {
                if (words.length != 4 || !words[1].matches("[0-9]{1,2}")) {
                    throw new IllegalArgumentException("expected '<backend uuid> <slot> <frontend uuid> <frontend name>'");
                }
                result.add(new Assignment(words[0], Integer.parseInt(words[1]), words[2], words[3]));
            } catch (IllegalArgumentException e) {
                throw new IvcudaConfigException("the back-end slot ledger " + file + " line " + (i + 1) + " is not an "
                        + "assignment ('" + GpuElement.shown(line) + "'): " + e.getMessage() + "; fix or remove the line");
            }
        }
        return result;
    }

    /** The assignment of front-end {@code frontendUuid}, if it has one. */
    public static Optional<Assignment> ofFrontend(List<Assignment> assignments, String frontendUuid) {
        return assignments.stream().filter(a -> a.frontendUuid.equals(frontendUuid)).findFirst();
    }

    /** Who holds {@code slot} of back-end {@code backendUuid}, if anyone. */
    public static Optional<Assignment> ofSlot(List<Assignment> assignments, String backendUuid, int slot) {
        return assignments.stream().filter(a -> a.backendUuid.equals(backendUuid) && a.slot == slot).findFirst();
    }

    /** The assignments of back-end {@code backendUuid}'s slots, by slot. */
    public static List<Assignment> ofBackend(List<Assignment> assignments, String backendUuid) {
        return assignments.stream().filter(a -> a.backendUuid.equals(backendUuid))
                .sorted(Comparator.comparingInt(Assignment::slot)).toList();
    }

    /** Changes the ledger: {@code change} gets the assignments as they are and returns them as they shall be. */
    @FunctionalInterface
    public interface Change<T> {
        T apply(List<Assignment> assignments) throws IvcudaConfigException;
    }

    /**
     * Runs {@code change} on a copy of the assignments while holding the ledger's lock (a file beside it,
     * so two provisioners, a daemon and a command, never both place a front-end in one slot), and writes the
     * list back when it changed: a complete new file, flushed, then renamed over the old one. A slot held
     * twice or a front-end holding two slots is refused before anything is written.
     */
    public <T> T update(Change<T> change) throws IvcudaConfigException {
        synchronized (IN_PROCESS) {
            return updateLocked(change);
        }
    }

    private <T> T updateLocked(Change<T> change) throws IvcudaConfigException {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Path lockFile = file.resolveSibling(file.getFileName() + ".lock");
            try (FileChannel lock = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 FileLock held = lock.lock()) {
                List<Assignment> before = read();
                List<Assignment> after = new ArrayList<>(before);
                T result = change.apply(after);
                if (!after.equals(before)) {
                    check(after);
                    write(after);
                }
                return result;
            }
        } catch (IOException e) {
            throw new IvcudaConfigException("cannot write the back-end slot ledger " + file + ": " + e.getMessage(), e);
        }
    }

    private void check(List<Assignment> assignments) {
        for (int i = 0; i < assignments.size(); i++) {
            for (int j = i + 1; j < assignments.size(); j++) {
                Assignment a = assignments.get(i);
                Assignment b = assignments.get(j);
                if (a.frontendUuid.equals(b.frontendUuid) || a.backendUuid.equals(b.backendUuid) && a.slot == b.slot) {
                    throw new IllegalStateException("a ledger change would give " + a.line() + " and " + b.line());
                }
            }
        }
    }

    private void write(List<Assignment> assignments) throws IOException {
        StringBuilder text = new StringBuilder("# ivcuda back-end slots: <backend uuid> <slot> <frontend uuid> <frontend name>\n"
                + "# written by ivshmem-provisioner; do not edit while it runs (docs/backend-domains.md)\n");
        assignments.stream().sorted(Comparator.comparing(Assignment::backendUuid).thenComparingInt(Assignment::slot))
                .forEach(a -> text.append(a.line()).append('\n'));
        Path temporary = file.resolveSibling(file.getFileName() + ".new");
        try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(java.nio.ByteBuffer.wrap(text.toString().getBytes(StandardCharsets.UTF_8)));
            out.force(true);
        }
        try {
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            throw new UncheckedIOException("the ledger's directory cannot rename atomically", e);
        }
    }

    /** A domain name as one line holds it: no line breaks or control characters (libvirt allows few, this is for the eye). */
    private static String oneWord(String name) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < name.length() && b.length() < 200; i++) {
            char c = name.charAt(i);
            b.append(Character.isISOControl(c) ? '?' : c);
        }
        return b.isEmpty() ? "?" : b.toString();
    }
}
