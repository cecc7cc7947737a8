package io.ivcuda.api;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes the server's {@code Dispatcher}: per wire function a decoder that reads the payload
 * (docs/protocol.md §5) with strict bounds checks, then checks the parameters the description
 * marks — handles (kind and owner, nullable, passthrough values, release), device ordinals, device
 * and pool ranges — and only then calls the section's handler with native values and encodes its
 * outs. A refused call names the field at fault in the {@code Reply}; one whose bytes follow
 * through the window still moves them ({@code Checks.settle}).
 */
final class DecoderEmitter {
    private final ApiDescription api;
    private final String header;

    /** @param header the generated files' first lines (banner and package) */
    DecoderEmitter(ApiDescription api, String header) {
        this.api = api;
        this.header = header;
    }

    String dispatcher(List<Function> wire) {
        StringBuilder s = new StringBuilder(header);
        s.append("import io.ivcuda.common.config.ServerKeys;\nimport java.nio.ByteOrder;\nimport org.agrona.DirectBuffer;\n\n");
        s.append("/**\n * Decodes payloads (docs/protocol.md §5) strictly: every field must lie inside the payload and the\n");
        s.append(" * payload must be consumed exactly; checks the parameters (handles, ordinals, ranges) through the\n");
        s.append(" * {@link Checks}; then calls the section's handler and encodes its outs into the response. A refused\n");
        s.append(" * request leaves {@link Reply#fault()} naming the field at fault.\n */\n");
        s.append("public final class Dispatcher {\n");
        s.append("    public static final int CUDA_SUCCESS = 0;\n");
        Map<String, Integer> results = new java.util.LinkedHashMap<>(api.results());
        results.putIfAbsent("CUDA_ERROR_INVALID_VALUE", 1);
        results.putIfAbsent("CUDA_ERROR_NOT_SUPPORTED", 801);
        results.putIfAbsent("CUDA_ERROR_OUT_OF_MEMORY", 2);
        for (Map.Entry<String, Integer> r : results.entrySet()) {
            s.append("    public static final int ").append(r.getKey()).append(" = ").append(r.getValue()).append(";\n");
        }
        s.append("    /** What a handler's default method answers: the dispatcher makes it CUDA_ERROR_NOT_SUPPORTED. */\n");
        s.append("    public static final int NOT_IMPLEMENTED = Integer.MIN_VALUE;\n");
        s.append("    public static final int MAX_INSTR = ").append(JavaNames.MAX_INSTR).append(";\n");
        s.append("    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;\n\n");
        s.append("    private Dispatcher() {\n    }\n\n");
        s.append("""
                    /** A buffer's padded byte length (u64 length word excluded), or -1 when it does not fit in {@code room}. */
                    private static long paddedLength(long length, int room) {
                        if (length < 0 || length > room) {
                            return -1;
                        }
                        long padded = (length + 7) & ~7L;
                        return padded > room ? -1 : padded;
                    }

                    /**
                     * Decodes an instr at {@code p} (after its length word) of {@code length} bytes, or null. The
                     * bytes are copied out of shared memory once, then checked and decoded from the copy: a guest
                     * that changes them meanwhile changes nothing the server already checked.
                     */
                    private static String instr(DirectBuffer in, int p, long length) {
                        if (length < 1 || length > MAX_INSTR) {
                            return null;
                        }
                        byte[] copy = new byte[(int) length];
                        in.getBytes(p, copy);
                        if (copy[copy.length - 1] != 0) {
                            return null;
                        }
                        int n = 0;
                        while (copy[n] != 0) {
                            n++;
                        }
                        return new String(copy, 0, n, java.nio.charset.StandardCharsets.US_ASCII);
                    }

                    /** Writes a buffer's length word, and zeroes its padding. */
                    private static int putBuffer(Reply r, int index, int length) {
                        r.buffer.putLong(index - 8, length, LE);
                        int padded = (length + 7) & ~7;
                        for (int i = length; i < padded; i++) {
                            r.buffer.putByte(index + i, (byte) 0);
                        }
                        return padded;
                    }

                    /** {@code count * size} bytes, or -1 when negative or beyond a long (a range no check accepts). */
                    private static long bytes(long count, int size) {
                        return count < 0 || count > Long.MAX_VALUE / size ? -1 : count * size;
                    }

                    private static String hex(long value) {
                        return "0x" + Long.toHexString(value);
                    }

                """);
        for (boolean sync : new boolean[] {true, false}) {
            String method = sync ? "sync" : "async";
            s.append("    /**\n     * Runs one ").append(sync ? "request-area (sync, internal, and an async record too large for the ring)"
                            : "ring (async)")
                    .append(" payload of {@code len} bytes at {@code off}.\n");
            s.append("     * {@code responseRoom} is the response area's payload capacity.\n     */\n");
            s.append("    public static int ").append(method)
                    .append("(Handlers h, int opcode, DirectBuffer in, int off, int len, Reply r, int responseRoom) {\n");
            s.append("        r.begin(NO_OUTS);\n        return switch (opcode) {\n");
            for (Function f : wire) {
                // an async function may also come as a request: its record did not fit the channel's
                // ring (limit.ring.bytes), and it is answered at once (docs/protocol.md §6)
                boolean fits = sync || f.mode() == Mode.ASYNC;
                s.append("            case Opcodes.").append(JavaNames.constantName(f.name())).append(" -> ");
                if (fits) {
                    s.append("d_").append(f.name()).append("(h, in, off, len, r, responseRoom);\n");
                } else {
                    s.append("r.fault(\"opcode (").append(f.mode().name().toLowerCase(Locale.ROOT))
                            .append(" function sent through the ring)\");\n");
                }
            }
            s.append("            default -> {\n                r.fault = \"opcode\";\n");
            s.append("                yield CUDA_ERROR_NOT_SUPPORTED;\n            }\n        };\n    }\n\n");
        }
        s.append("    private static final int[] NO_OUTS = {};\n\n");
        for (Function f : wire) {
            s.append(decoder(f));
        }
        s.append("}\n");
        return s.toString();
    }

    private String decoder(Function f) {
        StringBuilder s = new StringBuilder();
        List<Param> outs = f.responseParams();
        // layout of the fixed-size outs; the outbuf (if any) is last
        int[] layout = new int[outs.size()];
        int fixed = 0;
        Param outbuf = null;
        for (int i = 0; i < outs.size(); i++) {
            Param o = outs.get(i);
            if (o.direction() == Direction.OUTBUF) {
                outbuf = o;
                layout[i] = fixed + 8;
            } else {
                layout[i] = fixed;
                fixed += o.type().wire() == WireKind.BYTES ? (o.type().byteSize() + 7) & ~7 : 8;
            }
        }
        String layoutName = "L_" + f.name();
        s.append("    private static final int[] ").append(layoutName).append(" = {");
        for (int i = 0; i < layout.length; i++) {
            s.append(i > 0 ? ", " : "").append(layout[i]);
        }
        s.append("};\n\n");
        s.append("    private static int d_").append(f.name())
                .append("(Handlers h, DirectBuffer in, int off, int len, Reply r, int responseRoom) {\n");
        s.append("        r.begin(").append(layoutName).append(");\n");
        s.append("        final int wEnd = off + len;\n        int wP = off;\n");
        if (f.requestParams().stream().anyMatch(p -> p.direction() == Direction.INBUF || p.direction() == Direction.INSTR)) {
            s.append("        long wN;\n        long wPadded;\n");
        }
        StringBuilder call = new StringBuilder();
        for (Param p : f.requestParams()) {
            decodeParam(s, call, p);
        }
        s.append("        if (wP != wEnd) {\n            return r.fault(\"payload_len\");\n        }\n");
        // buffer lengths against their length params (bytes = elements * element size)
        for (Param p : f.params()) {
            if (p.direction() == Direction.INBUF) {
                Param lenParam = param(f, p.lengthParam());
                s.append("        if (").append(JavaNames.javaName(p.name())).append("Length != ").append(unsigned(lenParam)).append(") {\n");
                s.append("            return r.fault(\"").append(p.lengthParam()).append("\");\n        }\n");
            }
        }
        if (outbuf != null) {
            Param lenParam = param(f, outbuf.lengthParam());
            int elem = outbuf.type().byteSize();
            s.append("        final long wElements = ").append(unsigned(lenParam)).append(";\n");
            s.append("        if (wElements < 0 || wElements > Integer.MAX_VALUE) {\n");
            s.append("            return r.fault(\"").append(lenParam.name()).append("\");\n        }\n");
            s.append("        final long wCapacity = wElements * ").append(elem).append("L;\n");
            int outbufIndex = fixed + 8;
            s.append("        r.outbufIndex = r.payloadIndex + ").append(outbufIndex).append(";\n");
            s.append("        r.outbufCapacity = (int) Math.min(wCapacity, Math.max(0, responseRoom - ").append(outbufIndex).append(") & ~7);\n");
        }
        List<Param> released = checks(s, f);
        for (int i = 0; i < outs.size(); i++) {
            Param o = outs.get(i);
            if (o.direction() != Direction.OUTBUF && o.type().wire() == WireKind.BYTES) {
                s.append("        r.buffer.setMemory(r.payloadIndex + ").append(layout[i]).append(", ")
                        .append((o.type().byteSize() + 7) & ~7).append(", (byte) 0);\n");
            }
        }
        String args = call.toString();
        String prefix = f.mode() == Mode.ASYNC ? "" : "r";
        if (JavaNames.needsBuffer(f)) {
            prefix = prefix.isEmpty() ? "in" : prefix + ", in";
        }
        if (prefix.isEmpty() && args.startsWith(", ")) {
            args = args.substring(2);
        }
        String invoke = "h." + f.section() + "." + f.name() + "(" + prefix + args + ")";
        if (released.isEmpty()) {
            s.append("        final int wResult = ").append(invoke).append(";\n");
        } else {
            s.append("        int wResult = NOT_IMPLEMENTED;\n        try {\n            wResult = ").append(invoke).append(";\n");
            s.append("        } finally {\n");
            for (Param p : released) {
                s.append("            h.checks.endRelease(").append(JavaNames.javaName(p.name())).append(", wResult == CUDA_SUCCESS);\n");
            }
            s.append("        }\n");
        }
        s.append("        if (wResult == NOT_IMPLEMENTED) {\n            return ")
                .append(refusal(f, "\"opcode\", \"not implemented by this server\", CUDA_ERROR_NOT_SUPPORTED")).append(";\n        }\n");
        // encode the outs
        if (!outs.isEmpty()) {
            for (int i = 0; i < outs.size(); i++) {
                Param o = outs.get(i);
                if (o.direction() == Direction.OUTBUF || o.type().wire() == WireKind.BYTES) {
                    continue;
                }
                String value = switch (o.type().wire()) {
                    case I32 -> "(long) (int) r.values[" + i + "]";
                    case U32, F32 -> "r.values[" + i + "] & 0xffffffffL";
                    default -> "r.values[" + i + "]";
                };
                s.append("        r.buffer.putLong(r.payloadIndex + ").append(layout[i]).append(", ").append(value).append(", LE);\n");
            }
            if (outbuf != null) {
                s.append("        r.payloadLength = ").append(fixed + 8).append(" + putBuffer(r, r.outbufIndex, r.outbufLength);\n");
            } else {
                s.append("        r.payloadLength = ").append(fixed).append(";\n");
            }
        }
        s.append("        return wResult;\n    }\n\n");
        return s.toString();
    }

    private static void decodeParam(StringBuilder s, StringBuilder call, Param p) {
        String n = JavaNames.javaName(p.name());
        String field = "\"" + p.name() + "\"";
        switch (p.direction()) {
            case IN -> {
                if (p.type().wire() == WireKind.BYTES) {
                    int padded = (p.type().byteSize() + 7) & ~7;
                    s.append("        if (wEnd - wP < ").append(padded).append(") {\n            return r.fault(").append(field).append(");\n        }\n");
                    s.append("        final int ").append(n).append("Index = wP;\n        wP += ").append(padded).append(";\n");
                    call.append(", ").append(n).append("Index");
                } else {
                    s.append("        if (wEnd - wP < 8) {\n            return r.fault(").append(field).append(");\n        }\n");
                    String read = switch (p.type().wire()) {
                        case I32, U32 -> "(int) in.getLong(wP, LE)";
                        case F32 -> "Float.intBitsToFloat((int) in.getLong(wP, LE))";
                        default -> "in.getLong(wP, LE)";
                    };
                    s.append("        final ").append(JavaNames.javaType(p.type())).append(' ').append(n).append(" = ").append(read).append(";\n");
                    s.append("        wP += 8;\n");
                    // checked parameters reach the handler as their native value
                    boolean resolved = p.isHandle() || p.isOrdinal() || p.check().isPool();
                    call.append(", ").append(resolved ? nativeOf(p) : n);
                }
            }
            case INSTR, INBUF -> {
                s.append("        if (wEnd - wP < 8) {\n            return r.fault(").append(field).append(");\n        }\n");
                s.append("        wN = in.getLong(wP, LE);\n        wP += 8;\n");
                s.append("        wPadded = paddedLength(wN, wEnd - wP);\n");
                s.append("        if (wPadded < 0) {\n            return r.fault(").append(field).append(");\n        }\n");
                if (p.direction() == Direction.INSTR) {
                    s.append("        final String ").append(n).append(" = instr(in, wP, wN);\n");
                    s.append("        if (").append(n).append(" == null) {\n            return r.fault(").append(field).append(");\n        }\n");
                    call.append(", ").append(n);
                } else {
                    s.append("        final int ").append(n).append("Index = wP;\n");
                    s.append("        final int ").append(n).append("Length = (int) wN;\n");
                    call.append(", ").append(n).append("Index, ").append(n).append("Length");
                }
                s.append("        wP += (int) wPadded;\n");
            }
            default -> throw new IllegalStateException();
        }
    }

    /** The local holding a checked parameter's native value. */
    private static String nativeOf(Param p) {
        return "n_" + p.name();
    }

    /**
     * The parameter checks, in this order: handles (kind and owner), device ordinals, ranges (in the
     * declared order), and last the handles the call releases (so that no other check can fail after
     * one is held back). Returns the released parameters.
     */
    private List<Param> checks(StringBuilder s, Function f) {
        List<Param> ins = f.requestParams().stream().filter(p -> p.direction() == Direction.IN).toList();
        for (Param p : ins) {
            if (p.isHandle() && !p.check().release()) {
                HandleKind k = api.handles().get(p.type().handleKind());
                String n = JavaNames.javaName(p.name());
                s.append("        final long ").append(nativeOf(p)).append(";\n");
                StringBuilder free = new StringBuilder();
                if (k.hasPassthrough()) {
                    free.append(n).append(" >= ").append(k.passthroughLo()).append("L && ").append(n).append(" <= ")
                            .append(k.passthroughHi()).append('L');
                }
                if (p.check().nullable()) {
                    free.append(free.length() > 0 ? " || " : "").append(n).append(" == 0");
                }
                if (free.length() > 0) {
                    s.append("        if (").append(free).append(") {\n            ").append(nativeOf(p)).append(" = ").append(n)
                            .append(";\n        } else {\n    ");
                }
                s.append("        ").append(nativeOf(p)).append(" = h.checks.handle(HandleKinds.")
                        .append(JavaNames.constantName(k.name())).append(", ").append(n).append(");\n");
                String indent = free.length() > 0 ? "    " : "";
                s.append(indent).append("        if (").append(nativeOf(p)).append(" == Checks.NO_HANDLE) {\n");
                s.append(indent).append("            return ").append(refusal(f, "\"" + p.name() + "\", hex(" + n + ") + \" is not a live "
                        + k.name() + " of this process\", " + result(p, k.result()))).append(";\n");
                s.append(indent).append("        }\n");
                if (free.length() > 0) {
                    s.append("        }\n");
                }
            }
        }
        for (Param p : ins) {
            if (p.isOrdinal()) {
                String n = JavaNames.javaName(p.name());
                s.append("        final int ").append(nativeOf(p)).append(" = h.checks.device(").append(n).append(");\n");
                s.append("        if (").append(nativeOf(p)).append(" == Checks.NO_DEVICE) {\n");
                s.append("            return ").append(refusal(f, "\"" + p.name() + "\", \"device \" + " + n
                        + " + \" is not the device this VM sees (0)\", " + result(p, p.type().ordinalResult()))).append(";\n");
                s.append("        }\n");
            }
        }
        for (Param p : ins) {
            if (!p.check().isRange()) {
                continue;
            }
            ParamCheck c = p.check();
            String n = JavaNames.javaName(p.name());
            String bytes;
            if (c.sizeParam() == null) {
                bytes = c.sizeConst() + "L";
            } else {
                String size = unsigned(param(f, c.sizeParam()));
                bytes = c.multiplier() == 1 ? size : "bytes(" + size + ", " + c.multiplier() + ")";
            }
            String b = "b_" + p.name();
            s.append("        final long ").append(b).append(" = ").append(bytes).append(";\n");
            if (c.isPool()) {
                s.append("        final long ").append(nativeOf(p)).append(" = h.checks.poolRange(").append(n).append(", ").append(b).append(");\n");
                s.append("        if (").append(nativeOf(p)).append(" == 0) {\n");
                s.append("            return ").append(refusal(f, "\"" + p.name() + "\", " + n + " + \"+\" + " + b
                        + " + \" is outside this process's pool blocks\", " + result(p, null))).append(";\n");
            } else {
                s.append("        if (!h.checks.deviceRange(").append(n).append(", ").append(b).append(")) {\n");
                s.append("            return ").append(refusal(f, "\"" + p.name() + "\", hex(" + n + ") + \"+\" + " + b
                        + " + \" is outside this process's device memory\", " + result(p, null))).append(";\n");
            }
            s.append("        }\n");
        }
        // a call that answers a handle is refused before it makes the driver object the limits forbid
        for (Param p : f.responseParams()) {
            if (p.type().wire() == WireKind.HANDLE) {
                HandleKind k = api.handles().get(p.type().handleKind());
                s.append("        if (!h.checks.canMint(HandleKinds.").append(JavaNames.constantName(k.name())).append(")) {\n");
                s.append("            return ").append(refusal(f, "\"" + p.name() + "\", \"the process holds as many handles as the "
                        + "server's limits allow (\" + ServerKeys.LIMIT_HANDLES_PROCESS.name() + \", \" + ServerKeys.LIMIT_HANDLES_VM.name() "
                        + "+ \")\", CUDA_ERROR_OUT_OF_MEMORY")).append(";\n");
                s.append("        }\n");
            }
        }
        List<Param> released = ins.stream().filter(p -> p.check().release()).toList();
        for (Param p : released) {
            HandleKind k = api.handles().get(p.type().handleKind());
            String n = JavaNames.javaName(p.name());
            s.append("        final long ").append(nativeOf(p)).append(" = h.checks.beginRelease(HandleKinds.")
                    .append(JavaNames.constantName(k.name())).append(", ").append(n).append(");\n");
            s.append("        if (").append(nativeOf(p)).append(" == Checks.NO_HANDLE) {\n");
            s.append("            return ").append(refusal(f, "\"" + p.name() + "\", hex(" + n + ") + \" is not a "
                    + k.name() + " this process may destroy\", " + result(p, k.result()))).append(";\n");
            s.append("        }\n");
        }
        return released;
    }

    /** The result a refused parameter answers: its {@code else}, the kind's, or CUDA_ERROR_INVALID_VALUE. */
    private static String result(Param p, String byDefault) {
        return p.check().elseResult() != null ? p.check().elseResult() : byDefault != null ? byDefault : "CUDA_ERROR_INVALID_VALUE";
    }

    /** A refusal; for a function whose bytes follow through the window, after moving them all the same. */
    private static String refusal(Function f, String refuseArgs) {
        String refuse = "r.refuse(" + refuseArgs + ")";
        if (f.streams() == null) {
            return refuse;
        }
        return "h.checks.settle(" + f.streamsIn() + ", " + JavaNames.javaName(f.streams()) + ", " + refuse + ")";
    }

    private static String unsigned(Param lenParam) {
        String n = JavaNames.javaName(lenParam.name());
        return lenParam.type().wire() == WireKind.U32 ? "(" + n + " & 0xffffffffL)" : "(long) " + n;
    }

    private static Param param(Function f, String name) {
        return f.params().stream().filter(p -> p.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException(f.name() + ": no parameter " + name));
    }
}
