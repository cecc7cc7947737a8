#!/usr/bin/env python3
"""Plays QEMU's part of the ivshmem-server protocol on the host (QEMU docs/specs/ivshmem-spec.rst):
connects to a cuda-server's doorbell socket, reads the greeting (version, peer id, region fd,
the server's eventfd per vector, then our own per vector) and runs a command with
IVCUDA_DOORBELL_EVENTFDS set to the server's eventfds, so the guest library's doorbell rings the
server as BAR0 would, and IVCUDA_IRQ_EVENTFDS set to our own (the server's "MSI-X" writes), so the
library may sleep on them as it would on ivcuda-guest-irqd's in a VM. The connection stays open in the command: when it exits, "QEMU" has left.

usage: qemu_peer.py SOCKET VECTORS COMMAND [ARG...]"""
import array
import os
import socket
import struct
import sys


def receive(sock):
    fds = array.array("i")
    data, ancdata, _, _ = sock.recvmsg(8, socket.CMSG_SPACE(fds.itemsize))
    if len(data) != 8:
        sys.exit("qemu_peer: short message (%d bytes)" % len(data))
    fd = -1
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
            fd = fds[0]
    return struct.unpack("<q", data)[0], fd


def main():
    path, vectors, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    version, _ = receive(sock)
    if version != 0:
        sys.exit("qemu_peer: protocol version %d" % version)
    peer_id, _ = receive(sock)
    minus_one, region_fd = receive(sock)
    if minus_one != -1 or region_fd < 0:
        sys.exit("qemu_peer: expected the region fd")
    server_fds = []
    for v in range(vectors):
        peer, fd = receive(sock)
        if peer == peer_id or fd < 0:
            sys.exit("qemu_peer: expected the server's eventfd of vector %d" % v)
        server_fds.append(fd)
    guest_fds = []
    for v in range(vectors):
        peer, fd = receive(sock)
        if peer != peer_id or fd < 0:
            sys.exit("qemu_peer: expected our own eventfd of vector %d" % v)
        guest_fds.append(fd)
    for fd in server_fds + guest_fds + [sock.fileno()]:
        os.set_inheritable(fd, True)
    sock.detach()
    os.environ["IVCUDA_DOORBELL_EVENTFDS"] = ",".join(str(fd) for fd in server_fds)
    # the server raises "MSI-X vector v" by writing our own eventfd of v: the guest library may
    # sleep on it (unless IVCUDA_WAIT=poll), as it would on the daemon's in a VM
    os.environ["IVCUDA_IRQ_EVENTFDS"] = ",".join(str(fd) for fd in guest_fds)
    print("qemu_peer: peer %d, %d vectors, eventfds %s" % (peer_id, vectors, os.environ["IVCUDA_DOORBELL_EVENTFDS"]),
          file=sys.stderr)
    os.execvp(command[0], command)


main()
