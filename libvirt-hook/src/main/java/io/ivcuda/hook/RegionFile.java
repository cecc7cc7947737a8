package io.ivcuda.hook;

import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.nio.file.attribute.UserPrincipalNotFoundException;

/**
 * The VM's shared-memory file ({@code /dev/shm/ivcuda-U}). Created before QEMU starts with the exact
 * size (QEMU refuses a file of another size) and an owner QEMU can open: mode 0660, owner the server
 * user, group the QEMU group. Readiness is read from its header (docs/protocol.md §2).
 */
final class RegionFile {
    static final long MAGIC = HeaderFlyweight.MAGIC;
    static final int OFFSET_MAGIC = HeaderFlyweight.MAGIC_OFFSET;
    static final int OFFSET_SERVER_STATE = HeaderFlyweight.SERVER_STATE_OFFSET;
    static final int OFFSET_SERVER_MESSAGE = HeaderFlyweight.SERVER_MESSAGE_OFFSET;
    static final int STATE_READY = HeaderFlyweight.STATE_READY;

    /**
     * What the hook reads from a server's header: enough to know whether it is ready, or why not,
     * and which server wrote it (each one that initialises the region increments the epoch).
     */
    record Header(long magic, int serverState, int epoch, String serverMessage) {
        boolean isReady() {
            return magic == MAGIC && serverState == STATE_READY;
        }
    }

    private RegionFile() {
    }

    static void create(Path path, long size, String ownerUser, String group) throws HookException {
        try {
            UserPrincipalLookupService lookup = path.getFileSystem().getUserPrincipalLookupService();
            UserPrincipal owner = lookupUser(lookup, ownerUser);
            GroupPrincipal groupPrincipal = lookupGroup(lookup, group);
            Files.createDirectories(path.getParent());
            Files.deleteIfExists(path);
            Files.createFile(path);
            // Sparse: tmpfs allocates pages only when server or guest touch them.
            try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
                file.setLength(size);
            }
            PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
            view.setOwner(owner);
            view.setGroup(groupPrincipal);
            // After chown: chown may clear mode bits on some filesystems.
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw----"));
        } catch (IOException e) {
            throw new HookException("cannot create the region file " + path + ": " + e.getMessage(), e);
        }
    }

    static UserPrincipal lookupUser(UserPrincipalLookupService lookup, String user) throws HookException, IOException {
        try {
            return lookup.lookupPrincipalByName(user);
        } catch (UserPrincipalNotFoundException e) {
            throw new HookException("host configuration: server.user='" + user + "': no such user");
        }
    }

    static GroupPrincipal lookupGroup(UserPrincipalLookupService lookup, String group) throws HookException, IOException {
        try {
            return lookup.lookupPrincipalByGroupName(group);
        } catch (UserPrincipalNotFoundException e) {
            throw new HookException("host configuration: qemu.group='" + group + "': no such group");
        }
    }

    /** Reads the header; a file that is missing or shorter than a header reads as not ready. */
    static Header read(Path path) {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate(OFFSET_SERVER_MESSAGE + HeaderFlyweight.SERVER_MESSAGE_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            while (buffer.hasRemaining() && channel.read(buffer) > 0) {
                // fill
            }
            if (buffer.position() < OFFSET_SERVER_STATE + 4) {
                return new Header(0, 0, 0, "");
            }
            long magic = buffer.getLong(OFFSET_MAGIC);
            int state = buffer.getInt(OFFSET_SERVER_STATE);
            int epoch = buffer.getInt(HeaderFlyweight.EPOCH_OFFSET);
            StringBuilder message = new StringBuilder();
            for (int i = OFFSET_SERVER_MESSAGE; i < buffer.position() && buffer.get(i) != 0; i++) {
                char c = (char) (buffer.get(i) & 0xff);
                message.append(c >= 0x20 && c < 0x7f ? c : '?');
            }
            return new Header(magic, state, epoch, message.toString());
        } catch (IOException e) {
            return new Header(0, 0, 0, "");
        }
    }
}
