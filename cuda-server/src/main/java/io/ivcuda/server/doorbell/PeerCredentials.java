package io.ivcuda.server.doorbell;

/** Who is at the other end of a UNIX socket, as the kernel says (SO_PEERCRED). */
public record PeerCredentials(int pid, int uid, int gid) {
}
