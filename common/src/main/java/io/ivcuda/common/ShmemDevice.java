package io.ivcuda.common;

import java.nio.file.Path;
import java.util.Locale;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The {@code <shmem>} device a tagged domain carries, as far as ivcuda cares about it: name, model,
 * size (plain) or server socket (doorbell). Comparing two of these decides whether a domain needs
 * redefining, so libvirt's own additions (alias, PCI address) never cause one.
 */
public record ShmemDevice(String name, Mode mode, long size, Path socket) {

    /**
     * {@code <msi vectors>} of a doorbell device: the cuda-server creates exactly this many eventfd
     * pairs (QEMU refuses more); channel i uses vector i mod vectors. 32 is the most channels the
     * server lays out by itself (cuda-server's Layout.DEFAULT_CHANNELS), so each channel has a
     * vector of its own: only then may a guest thread sleep on its vector's interrupt
     * (docs/protocol.md §8: an eventfd's count is taken by one reader).
     */
    public static final int DOORBELL_VECTORS = 32;

    public static ShmemDevice desired(InstancePaths paths, VmSettings settings) {
        return settings.mode() == Mode.PLAIN
                ? new ShmemDevice(paths.shmemName(), Mode.PLAIN, settings.regionSize(), null)
                : new ShmemDevice(paths.shmemName(), Mode.DOORBELL, 0, paths.doorbellSocket());
    }

    /** Reads a {@code <shmem>} element; an unknown model gives a device with a null mode (never equal to a desired one). */
    public static ShmemDevice read(Element shmem) {
        String name = shmem.getAttribute("name");
        Element model = DomainXml.child(shmem, "model");
        Mode mode = model == null ? null : Mode.fromShmemModel(model.getAttribute("type"));
        Element size = DomainXml.child(shmem, "size");
        long bytes = size == null ? 0 : parseLibvirtSize(size.getAttribute("unit"), size.getTextContent());
        Element server = DomainXml.child(shmem, "server");
        Path socket = server == null || server.getAttribute("path").isEmpty() ? null : Path.of(server.getAttribute("path"));
        if (mode == Mode.DOORBELL) {
            // Doorbell mode takes its size from the server's fd; libvirt ignores <size> there, and so do we.
            Element msi = DomainXml.child(shmem, "msi");
            boolean msiAsWanted = msi != null && Integer.toString(DOORBELL_VECTORS).equals(msi.getAttribute("vectors")) && "on".equals(msi.getAttribute("ioeventfd"));
            return new ShmemDevice(name, msiAsWanted ? mode : null, 0, socket);
        }
        return new ShmemDevice(name, mode, bytes, socket);
    }

    /** libvirt's scaled integers (formatdomain "Memory Allocation" units); a missing unit means bytes. -1 when unreadable. */
    static long parseLibvirtSize(String unit, String text) {
        long value;
        try {
            value = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
        String u = unit == null || unit.isEmpty() ? "b" : unit;
        return switch (u.toLowerCase(Locale.ROOT)) {
            case "b", "bytes" -> value;
            case "k", "kib" -> value << 10;
            case "kb" -> value * 1000;
            case "m", "mib" -> value << 20;
            case "mb" -> value * 1000_000;
            case "g", "gib" -> value << 30;
            case "gb" -> value * 1000_000_000L;
            case "t", "tib" -> value << 40;
            default -> -1;
        };
    }

    /**
     * Writes this device into {@code shmem} (a new or an existing element): model, size or server and msi.
     * Children libvirt manages (alias, address) are kept so an update does not move the device.
     */
    public void writeInto(Element shmem) {
        Document doc = shmem.getOwnerDocument();
        shmem.setAttribute("name", name);
        for (String managed : new String[] {"model", "size", "server", "msi"}) {
            Element old;
            while ((old = DomainXml.child(shmem, managed)) != null) {
                removeWithIndent(old);
            }
        }
        Node first = shmem.getFirstChild();
        Element model = doc.createElement("model");
        model.setAttribute("type", mode.shmemModel());
        shmem.insertBefore(model, first);
        if (mode == Mode.PLAIN) {
            Element size = doc.createElement("size");
            size.setAttribute("unit", "M");
            size.setTextContent(Long.toString(this.size >> 20));
            shmem.insertBefore(size, first);
        } else {
            Element server = doc.createElement("server");
            server.setAttribute("path", socket.toString());
            shmem.insertBefore(server, first);
            Element msi = doc.createElement("msi");
            msi.setAttribute("vectors", Integer.toString(DOORBELL_VECTORS));
            msi.setAttribute("ioeventfd", "on");
            shmem.insertBefore(msi, first);
        }
    }

    private static void removeWithIndent(Element element) {
        Node previous = element.getPreviousSibling();
        if (previous != null && previous.getNodeType() == Node.TEXT_NODE && previous.getTextContent().isBlank()) {
            previous.getParentNode().removeChild(previous);
        }
        element.getParentNode().removeChild(element);
    }

    /** A one-line description for logs and the CLI. */
    public String describe() {
        return mode == Mode.PLAIN
                ? name + " (ivshmem-plain, " + ByteSize.describe(size) + ")"
                : name + " (ivshmem-doorbell, server " + socket + ")";
    }
}
