package io.ivcuda.server.core;

import org.agrona.UnsafeApi;

/**
 * The device memory a module image's module-scope variables take once loaded — {@code __device__} and
 * {@code __constant__} variables, initialised or not — measured from the image the server received, so that it
 * counts against the VM's memory quota before the driver loads it (docs/sharing.md, "Memory quota as the guest
 * sees it"). The image is the server's private copy (never shared memory) but was written by a hostile guest:
 * every offset and size is checked against the image before it is read, and anything not understood counts 0 —
 * this never throws.
 *
 * <p>What is measured, derived from what nvcc 13.0 writes (cuda-server/src/test/resources/module-images):
 * <ul>
 * <li>a cubin (ELF64, little-endian, {@code e_machine} 190, EM_CUDA): the sizes of its sections
 * {@code .nv.global} (uninitialised variables, SHT_NOBITS), {@code .nv.global.init} (initialised ones) and
 * {@code .nv.constant3} (the bank nvcc puts {@code __constant__} variables in for sm_75 to sm_120);</li>
 * <li>a fat binary (magic 0xBA55ED50): the entry the driver would run on the device — the cubin built for its
 * compute capability, else the highest of the same major below it, else the PTX of the highest architecture not
 * above it — measured as a cubin or as PTX; a compressed entry cannot be measured (it counts 0, and says so);</li>
 * <li>PTX text: the {@code .global} and {@code .const} variables it declares at module scope (not
 * {@code .extern} ones), each its element size × vector width × array length.</li>
 * </ul>
 */
public final class ModuleFootprint {
    /** What the image was taken for. */
    public enum Kind { CUBIN, FATBIN_CUBIN, FATBIN_PTX, PTX, COMPRESSED, NO_ENTRY, UNRECOGNISED }

    /**
     * @param bytes the module-scope variables' bytes (saturated at Long.MAX_VALUE)
     * @param arch the fat binary entry's architecture (major·10 + minor), else 0
     */
    public record Measure(long bytes, Kind kind, int arch) {
    }

    static final int FATBIN_MAGIC = 0xBA55ED50;
    static final int FATBIN_HEADER = 16;
    /** An entry's header up to its flags: kind u16, version u16, header size u32, payload size u64, ..., arch u32 at 28, flags u64 at 40. */
    static final int ENTRY_HEADER_MIN = 48;
    static final int ENTRY_PTX = 1;
    static final int ENTRY_ELF = 2;
    /** Entry flags nvcc sets on a compressed entry (0x8000: -compress-mode default, size, balance; 0x2000: speed). */
    static final long ENTRY_COMPRESSED = 0x8000L | 0x2000L;
    /** Entry flag of an architecture-specific cubin (sm_90a): it runs on that architecture only. */
    static final long ENTRY_ARCH_SPECIFIC = 0x100000L;
    static final int EM_CUDA = 190;
    /** Longest PTX statement text (before an initialiser) considered; longer ones count 0. */
    static final int MAX_STATEMENT = 4096;

    private ModuleFootprint() {
    }

    /** Bytes of an image, read with bounds checked by the caller (index in 0..size-1). */
    interface Bytes {
        long size();

        int get(long index);
    }

    /** The image at {@code address} (server memory) of {@code size} bytes, for a device of {@code computeCapability} (major·10 + minor). */
    public static Measure of(long address, long size, int computeCapability) {
        return of(new Bytes() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public int get(long index) {
                return UnsafeApi.getByte(address + index) & 0xff;
            }
        }, computeCapability);
    }

    /** The image in {@code image}, for tests. */
    public static Measure of(byte[] image, int computeCapability) {
        return of(new Bytes() {
            @Override
            public long size() {
                return image.length;
            }

            @Override
            public int get(long index) {
                return image[(int) index] & 0xff;
            }
        }, computeCapability);
    }

    static Measure of(Bytes b, int computeCapability) {
        try {
            long size = b.size();
            if (size >= 4 && u32(b, 0) == (FATBIN_MAGIC & 0xffffffffL)) {
                return fatbin(b, size, computeCapability);
            }
            if (size >= 4 && u32(b, 0) == 0x464c457fL) {
                long bytes = cubin(b, 0, size);
                return bytes < 0 ? new Measure(0, Kind.UNRECOGNISED, 0) : new Measure(bytes, Kind.CUBIN, 0);
            }
            if (looksLikePtx(b, size)) {
                return new Measure(PtxGlobals.measure(b, 0, size), Kind.PTX, 0);
            }
        } catch (RuntimeException e) {
            // a bug here must not fail a load: the image counts 0 (every read above is bounds-checked)
            return new Measure(0, Kind.UNRECOGNISED, 0);
        }
        return new Measure(0, Kind.UNRECOGNISED, 0);
    }

    /** Little-endian unsigned reads; the caller has checked the bytes are inside the image. */
    static int u16(Bytes b, long at) {
        return b.get(at) | b.get(at + 1) << 8;
    }

    static long u32(Bytes b, long at) {
        return (long) u16(b, at) | (long) u16(b, at + 2) << 16;
    }

    /** A u64 as a long; negative when it is 2^63 or more. */
    static long u64(Bytes b, long at) {
        return u32(b, at) | u32(b, at + 4) << 32;
    }

    /** Whether {@code length} bytes at {@code offset} lie inside [0, limit). */
    static boolean inside(long offset, long length, long limit) {
        return offset >= 0 && length >= 0 && offset <= limit && length <= limit - offset;
    }

    static long add(long a, long b) {
        long sum = a + b;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }

    /**
     * The module-scope variables of the cubin at [base, base+length): -1 when it is not a 64-bit little-endian
     * EM_CUDA ELF, 0 when its section table cannot be read.
     */
    static long cubin(Bytes b, long base, long length) {
        if (length < 64 || u32(b, base) != 0x464c457fL || b.get(base + 4) != 2 || b.get(base + 5) != 1
                || u16(b, base + 18) != EM_CUDA) {
            return -1;
        }
        long shoff = u64(b, base + 0x28);
        int shentsize = u16(b, base + 0x3a);
        int shnum = u16(b, base + 0x3c);
        int shstrndx = u16(b, base + 0x3e);
        if (shentsize < 64 || shnum == 0 || shstrndx >= shnum || !inside(shoff, (long) shnum * shentsize, length)) {
            return 0;
        }
        long strings = base + shoff + (long) shstrndx * shentsize;
        long stringsOffset = u64(b, strings + 24);
        long stringsSize = u64(b, strings + 32);
        if (!inside(stringsOffset, stringsSize, length)) {
            return 0;
        }
        long total = 0;
        for (int i = 0; i < shnum; i++) {
            long header = base + shoff + (long) i * shentsize;
            long name = u32(b, header);
            long type = u32(b, header + 4);
            long offset = u64(b, header + 24);
            long size = u64(b, header + 32);
            if (name >= stringsSize) {
                continue;
            }
            long at = base + stringsOffset + name;
            long room = stringsSize - name;
            boolean counted = named(b, at, room, ".nv.global") || named(b, at, room, ".nv.global.init")
                    || named(b, at, room, ".nv.constant3");
            if (!counted) {
                continue;
            }
            if (type == 8) {
                // SHT_NOBITS: the size is what the driver allocates, whatever it claims (a huge one is refused by the quota)
                total = add(total, size < 0 ? Long.MAX_VALUE : size);
            } else if (inside(offset, size, length)) {
                total = add(total, size);
            }
        }
        return total;
    }

    /** Whether the NUL-terminated string at {@code at} (at most {@code room} bytes) is {@code name}. */
    static boolean named(Bytes b, long at, long room, String name) {
        if (room < name.length() + 1) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            if (b.get(at + i) != name.charAt(i)) {
                return false;
            }
        }
        return b.get(at + name.length()) == 0;
    }

    /** One entry of a fat binary: its payload's place and size, kind, architecture and flags. */
    private record Entry(int kind, long payload, long size, int arch, boolean compressed, boolean archSpecific) {
    }

    static Measure fatbin(Bytes b, long size, int cc) {
        if (size < FATBIN_HEADER) {
            return new Measure(0, Kind.UNRECOGNISED, 0);
        }
        int headerSize = u16(b, 6);
        long fatSize = u64(b, 8);
        if (headerSize < FATBIN_HEADER || headerSize > size) {
            return new Measure(0, Kind.UNRECOGNISED, 0);
        }
        long end = fatSize < 0 || fatSize > size - headerSize ? size : headerSize + fatSize;
        Entry exact = null;
        Entry sameMajor = null;
        Entry ptx = null;
        long at = headerSize;
        while (end - at >= ENTRY_HEADER_MIN) {
            int kind = u16(b, at);
            long entryHeader = u32(b, at + 4);
            long payloadSize = u64(b, at + 8);
            if (entryHeader < ENTRY_HEADER_MIN || !inside(at + entryHeader, payloadSize, end) || entryHeader > end - at) {
                break;
            }
            long compressedSize = u32(b, at + 16);
            int arch = (int) Math.min(u32(b, at + 28), Integer.MAX_VALUE);
            long flags = u64(b, at + 40);
            Entry e = new Entry(kind, at + entryHeader, payloadSize, arch,
                    (flags & ENTRY_COMPRESSED) != 0 || compressedSize != 0, (flags & ENTRY_ARCH_SPECIFIC) != 0);
            if (kind == ENTRY_ELF && arch == cc && exact == null) {
                exact = e;
            } else if (kind == ENTRY_ELF && !e.archSpecific() && arch / 10 == cc / 10 && arch < cc
                    && (sameMajor == null || arch > sameMajor.arch())) {
                sameMajor = e;
            } else if (kind == ENTRY_PTX && arch <= cc && (ptx == null || arch > ptx.arch())) {
                ptx = e;
            }
            at += entryHeader + payloadSize;
        }
        Entry chosen = exact != null ? exact : sameMajor != null ? sameMajor : ptx;
        if (chosen == null) {
            return new Measure(0, Kind.NO_ENTRY, 0);
        }
        if (chosen.compressed()) {
            return new Measure(0, Kind.COMPRESSED, chosen.arch());
        }
        if (chosen.kind() == ENTRY_PTX) {
            return new Measure(PtxGlobals.measure(b, chosen.payload(), chosen.payload() + chosen.size()), Kind.FATBIN_PTX,
                    chosen.arch());
        }
        long bytes = cubin(b, chosen.payload(), chosen.size());
        return bytes < 0 ? new Measure(0, Kind.UNRECOGNISED, chosen.arch())
                : new Measure(bytes, Kind.FATBIN_CUBIN, chosen.arch());
    }

    /** PTX text: printable text (up to its NUL) with a {@code .version} directive near its start. */
    static boolean looksLikePtx(Bytes b, long size) {
        long look = Math.min(size, 4096);
        StringBuilder head = new StringBuilder();
        for (long i = 0; i < look; i++) {
            int c = b.get(i);
            if (c == 0) {
                break;
            }
            if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c > 0x7e) {
                return false;
            }
            head.append((char) c);
        }
        return head.indexOf(".version") >= 0;
    }
}
