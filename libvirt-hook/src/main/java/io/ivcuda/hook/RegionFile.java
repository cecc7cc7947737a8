package io.ivcuda.hook;

import io.ivcuda.common.config.HostKeys;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.nio.file.attribute.UserPrincipalNotFoundException;

/**
 * The VM's shared-memory file ({@code /dev/shm/ivcuda-U}). Created before QEMU starts with the exact
 * size (QEMU refuses a file of another size) and an owner QEMU can open: mode 0660, owner the server
 * user, group the QEMU group. Readiness is read from its header ({@link io.ivcuda.common.RegionHeader}).
 */
final class RegionFile {
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

    /**
     * A back-end's region file (issue 16): made as {@link #create} makes one when it is not there, kept as it is
     * when it is (a running front-end's QEMU may map it, so it is never replaced), refused when its size is
     * not {@code size} (QEMU would refuse it too, less clearly).
     */
    static void ensure(Path path, long size, String ownerUser, String group) throws HookException {
        if (Files.exists(path)) {
            long actual;
            try {
                actual = Files.size(path);
            } catch (IOException e) {
                throw new HookException("cannot read the region file " + path + ": " + e.getMessage(), e);
            }
            if (actual != size) {
                throw new HookException("the region file " + path + " is " + actual + " bytes, not " + size,
                        path + " is left from a start with another size. Stop the front-ends served by this back-end, "
                        + "remove the file, and start the back-end again.");
            }
            return;
        }
        create(path, size, ownerUser, group);
    }

    static UserPrincipal lookupUser(UserPrincipalLookupService lookup, String user) throws HookException, IOException {
        try {
            return lookup.lookupPrincipalByName(user);
        } catch (UserPrincipalNotFoundException e) {
            throw new HookException("host configuration: " + HostKeys.SERVER_USER.name() + "='" + user + "': no such user");
        }
    }

    static GroupPrincipal lookupGroup(UserPrincipalLookupService lookup, String group) throws HookException, IOException {
        try {
            return lookup.lookupPrincipalByGroupName(group);
        } catch (UserPrincipalNotFoundException e) {
            throw new HookException("host configuration: " + HostKeys.QEMU_GROUP.name() + "='" + group + "': no such group");
        }
    }
}
