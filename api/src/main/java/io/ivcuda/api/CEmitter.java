package io.ivcuda.api;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Writes the guest library's generated C: {@code ivc_region.h} (the region's layout, see
 * {@link RegionHeaderEmitter}), {@code ivc_api.h} (versions, opcodes,
 * prototypes), {@code ivc_stubs.c} (one marshalling function per sync/async/internal
 * operation, exported aliases, ptds/ptsz variants, unsupported stubs) and
 * {@code ivc_exports.c} (the table cuGetProcAddress searches).
 *
 * <p>The generated code only calls the small encoder/decoder API of
 * {@code guest/include/ivc_call.h}; the wire layout itself (docs/protocol.md §5) lives
 * there, so every stub reads as "put the ins, call, get the outs".
 */
public final class CEmitter {

    /** cuda.h's per-thread default stream handle, substituted for a NULL stream. */
    private static final String PER_THREAD_STREAM = "CU_STREAM_PER_THREAD";

    private final ApiDescription api;

    public CEmitter(ApiDescription api) {
        this.api = api;
    }

    public void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("ivc_region.h"), new RegionHeaderEmitter(api).header(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("ivc_api.h"), header(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("ivc_stubs.c"), stubs(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("ivc_exports.c"), exportTable(), StandardCharsets.UTF_8);
    }

    // ---- ivc_api.h ------------------------------------------------------------------

    String header() {
        StringBuilder s = new StringBuilder();
        s.append(banner());
        s.append("#ifndef IVC_API_H\n#define IVC_API_H\n\n");
        s.append("#include \"ivc_cuda_types.h\"\n#include \"ivc_region.h\"\n\n");
        s.append("#define IVC_API_VERSION ").append(api.apiVersion()).append('\n');
        s.append(String.format(Locale.ROOT, "#define IVC_API_HASH 0x%016xULL%n", api.apiHash()));
        s.append('\n');
        s.append("/* Wire opcodes (docs/protocol.md §4, §6); 0 is the ring's PAD record. */\n");
        s.append("enum ivc_opcode {\n    IVC_OP_PAD = 0,\n");
        for (Function f : api.functions()) {
            if (f.mode().onWire()) {
                s.append("    IVC_OP_").append(f.name()).append(" = ").append(f.opcode()).append(",\n");
            }
        }
        s.append("};\n\n");
        s.append("/* Generated exported functions (the real CUDA C signatures). */\n");
        for (Function f : api.functions()) {
            if (isExportedStub(f)) {
                s.append(prototype(f, f.name())).append(";\n");
                if (f.ptds()) {
                    s.append(prototype(f, f.name() + ptdsSuffix(f))).append(";\n");
                }
            }
        }
        s.append("\n/* Hand-written hooks around generated stubs (`hook` lines of the description). */\n");
        for (Function f : api.functions()) {
            if (api.hooked().contains(f.name())) {
                s.append(hookPrototype(f, "before")).append(";\n").append(hookPrototype(f, "after")).append(";\n");
            }
        }
        s.append("\n/* Hand-written local answers (`local` lines of the description): IVC_NOT_LOCAL sends the call. */\n");
        s.append("#define IVC_NOT_LOCAL ((CUresult)0x7fffffff)\n");
        for (Function f : api.functions()) {
            if (api.local().contains(f.name())) {
                s.append(prototype(f, "ivc_local_" + f.name())).append(";\n");
            }
        }
        s.append("\n/* Marshallers of internal operations, used by the hand-written code. */\n");
        for (Function f : api.functions()) {
            if (isMarshaller(f)) {
                s.append(prototype(f, marshallerName(f))).append(";\n");
            }
        }
        s.append("\n/* Custom functions are written by hand (guest/src); their exported aliases:\n");
        s.append(" * IVC_ALIASES_<name> placed after the definition makes every listed symbol an alias. */\n");
        for (Function f : api.functions()) {
            if (f.mode() == Mode.CUSTOM) {
                s.append("#define IVC_ALIASES_").append(f.name());
                List<String> aliases = aliasSymbols(f);
                if (aliases.isEmpty()) {
                    s.append(" /* none */");
                }
                for (String a : aliases) {
                    s.append(" \\\n    IVC_ALIAS(").append(a).append(", ").append(f.name()).append(")");
                }
                s.append('\n');
            }
        }
        s.append("\n#endif\n");
        return s.toString();
    }

    // ---- ivc_stubs.c ----------------------------------------------------------------

    String stubs() {
        StringBuilder s = new StringBuilder();
        s.append(banner());
        s.append("#include \"ivc_api.h\"\n#include \"ivc_call.h\"\n\n");
        for (Function f : api.functions()) {
            if (isExportedStub(f)) {
                s.append(body(f, f.name(), true));
                for (String a : aliasSymbols(f)) {
                    s.append("IVC_ALIAS(").append(a).append(", ").append(f.name()).append(")\n");
                }
                if (f.ptds()) {
                    s.append(ptdsVariant(f));
                }
                s.append('\n');
            } else if (isMarshaller(f)) {
                s.append(body(f, marshallerName(f), false)).append('\n');
            }
        }
        s.append("/* Names programs look up that are not remoted: NOT_SUPPORTED, logged once per name. */\n");
        for (String name : api.unsupported()) {
            s.append("IVC_EXPORT CUresult ").append(name).append("(void)\n{\n");
            s.append("    static atomic_int logged;\n");
            s.append("    return ivc_unsupported(\"").append(name).append("\", &logged);\n}\n");
        }
        return s.toString();
    }

    private String body(Function f, String cName, boolean exported) {
        StringBuilder s = new StringBuilder();
        s.append(exported ? "IVC_EXPORT " : "").append(prototype(f, cName)).append("\n{\n");
        for (Param p : f.params()) {
            if (p.direction() == Direction.OUT || p.direction() == Direction.OUTBUF
                    || p.direction() == Direction.INSTR) {
                s.append("    if (").append(p.name()).append(" == NULL)\n");
                s.append("        return ivc_null_argument(\"").append(f.name()).append("\", \"")
                        .append(p.name()).append("\");\n");
            }
        }
        boolean hooked = exported && api.hooked().contains(f.name());
        String arguments = f.params().stream().map(Param::name).collect(Collectors.joining(", "));
        if (exported && api.local().contains(f.name())) {
            s.append("    CUresult answered = ivc_local_").append(f.name()).append("(").append(arguments).append(");\n");
            s.append("    if (answered != IVC_NOT_LOCAL)\n        return answered;\n");
        }
        if (hooked) {
            s.append("    ivc_hook_before_").append(f.name()).append("(").append(arguments).append(");\n");
        }
        s.append("    struct ivc_call call;\n");
        s.append("    CUresult result = ivc_begin(&call, IVC_OP_").append(f.name()).append(", \"")
                .append(f.name()).append("\");\n");
        s.append("    if (result != CUDA_SUCCESS)\n        return ").append(hooked ? afterHook(f, "result", arguments) : "result")
                .append(";\n");
        for (Param p : f.requestParams()) {
            s.append("    ").append(put(f, p)).append(";\n");
        }
        if (f.mode() == Mode.ASYNC) {
            s.append("    return ").append(hooked ? afterHook(f, "ivc_async(&call)", arguments)
                    : "ivc_async(&call)").append(";\n}\n");
            return s.toString();
        }
        s.append("    result = ").append(f.cached() ? "ivc_sync_cached" : "ivc_sync").append("(&call);\n");
        List<Param> outs = f.responseParams();
        s.append("    if (ivc_response(&call)) {\n");
        for (Param p : outs) {
            s.append("        ").append(get(f, p)).append(";\n");
        }
        s.append("        result = ivc_finish(&call, result);\n    }\n");
        s.append("    return ").append(hooked ? afterHook(f, "result", arguments) : "result").append(";\n}\n");
        return s.toString();
    }

    /** The after hook sees the result and may change it (it runs after the channel is free). */
    private static String afterHook(Function f, String result, String arguments) {
        return "ivc_hook_after_" + f.name() + "(" + result + (arguments.isEmpty() ? "" : ", " + arguments) + ")";
    }

    private static String hookPrototype(Function f, String when) {
        String p = prototype(f, "ivc_hook_" + when + "_" + f.name());
        if (when.equals("before")) {
            return "void" + p.substring("CUresult".length());
        }
        int open = p.indexOf('(');
        String rest = p.substring(open + 1);
        return p.substring(0, open + 1) + "CUresult result" + (rest.equals("void)") ? ")" : ", " + rest);
    }

    private String put(Function f, Param p) {
        String n = p.name();
        return switch (p.direction()) {
            case INSTR -> "ivc_put_str(&call, " + n + ")";
            case INBUF -> "ivc_put_buf(&call, " + n + ", (uint64_t)" + p.lengthParam() + ")";
            default -> switch (p.type().wire()) {
                case I32, I64 -> "ivc_put_i64(&call, (int64_t)" + n + ")";
                case U32, U64 -> "ivc_put_u64(&call, (uint64_t)" + n + ")";
                case HANDLE -> "ivc_put_u64(&call, (uint64_t)(uintptr_t)" + n + ")";
                case F32 -> "ivc_put_f32(&call, " + n + ")";
                case BYTES -> "ivc_put_bytes(&call, &" + n + ", " + p.type().byteSize() + ")";
            };
        };
    }

    private String get(Function f, Param p) {
        String n = p.name();
        if (p.direction() == Direction.OUTBUF) {
            return "ivc_get_buf(&call, " + n + ", (uint64_t)" + p.lengthParam() + " * "
                    + elementSize(p.type()) + ")";
        }
        return switch (p.type().wire()) {
            case I32 -> "ivc_get_i32(&call, (int32_t *)" + n + ")";
            case U32 -> "ivc_get_u32(&call, (uint32_t *)" + n + ")";
            case I64, U64 -> "ivc_get_u64(&call, (uint64_t *)" + n + ")";
            case HANDLE -> "ivc_get_handle(&call, (void **)" + n + ")";
            case F32 -> "ivc_get_f32(&call, " + n + ")";
            case BYTES -> "ivc_get_bytes(&call, " + n + ", " + p.type().byteSize() + ")";
        };
    }

    /** The per-thread variant: the same call with NULL streams replaced (cuda.h's _ptsz/_ptds). */
    private String ptdsVariant(Function f) {
        String name = f.name() + ptdsSuffix(f);
        StringBuilder s = new StringBuilder();
        s.append("IVC_EXPORT ").append(prototype(f, name)).append("\n{\n");
        boolean hasStream = false;
        for (Param p : f.params()) {
            if (isStream(p)) {
                hasStream = true;
                s.append("    if (").append(p.name()).append(" == NULL)\n        ").append(p.name())
                        .append(" = ").append(PER_THREAD_STREAM).append(";\n");
            }
        }
        if (!hasStream) {
            s.append("    /* No stream on the wire (protocol v1): runs as the legacy-stream form. */\n");
        }
        s.append("    return ").append(f.name()).append("(")
                .append(f.params().stream().map(Param::name).collect(Collectors.joining(", ")))
                .append(");\n}\n");
        return s.toString();
    }

    // ---- ivc_exports.c --------------------------------------------------------------

    String exportTable() {
        StringBuilder s = new StringBuilder();
        s.append(banner());
        s.append("/* Deliberately no prototypes here: every entry is only an address. */\n");
        s.append("#include \"ivc_exports.h\"\n\n");
        List<String> declared = new ArrayList<>();
        List<String> rows = new ArrayList<>();
        for (Function f : api.functions()) {
            if (f.exports().isEmpty()) {
                continue;
            }
            String variant = f.ptds() ? f.name() + ptdsSuffix(f) : null;
            if (variant != null) {
                declared.add(variant);
            }
            for (Export e : f.exports()) {
                declared.add(e.symbol());
                rows.add("    { \"" + e.base() + "\", " + e.version() + ", \"" + e.symbol() + "\", "
                        + e.symbol() + ", " + (variant == null ? "NULL" : variant) + " },");
            }
        }
        for (String name : api.unsupported()) {
            declared.add(name);
            rows.add("    { \"" + name + "\", 0, \"" + name + "\", " + name + ", NULL },");
        }
        for (String d : declared) {
            s.append("extern void ").append(d).append("(void);\n");
        }
        s.append("\nconst struct ivc_export ivc_export_table[] = {\n");
        rows.forEach(r -> s.append(r).append('\n'));
        s.append("};\n\nconst size_t ivc_export_count = sizeof ivc_export_table / sizeof ivc_export_table[0];\n");
        return s.toString();
    }

    // ---- helpers --------------------------------------------------------------------

    private static boolean isExportedStub(Function f) {
        return (f.mode() == Mode.SYNC || f.mode() == Mode.ASYNC) && !f.exports().isEmpty();
    }

    private static boolean isMarshaller(Function f) {
        return f.mode() == Mode.INTERNAL || (f.mode() == Mode.ASYNC && f.exports().isEmpty());
    }

    static String marshallerName(Function f) {
        return f.name().startsWith("ivc_") ? f.name() : "ivc_" + f.name();
    }

    /** Exported symbols other than the implementing function's own name. */
    private static List<String> aliasSymbols(Function f) {
        return f.exports().stream().map(Export::symbol).filter(sym -> !sym.equals(f.name())).toList();
    }

    private static boolean isStream(Param p) {
        return p.direction() == Direction.IN && p.type().cName().equals("CUstream");
    }

    /** cuda.h: stream-ordered calls get _ptsz, synchronous copies and memsets _ptds. */
    static String ptdsSuffix(Function f) {
        boolean streamOrdered = f.params().stream().anyMatch(CEmitter::isStream)
                || f.name().contains("Async") || f.name().startsWith("cuLaunch");
        return streamOrdered ? "_ptsz" : "_ptds";
    }

    private static int elementSize(TypeInfo t) {
        return switch (t.cName()) {
            case "char" -> 1;
            case "uchar" -> 1;
            case "ushort" -> 2;
            case "int", "unsigned", "u32", "CUresult", "CUdevice" -> 4;
            default -> t.wire() == WireKind.BYTES ? t.byteSize() : 8;
        };
    }

    private static String cType(TypeInfo t) {
        return switch (t.cName()) {
            case "u32" -> "uint32_t";
            case "u64" -> "uint64_t";
            case "uchar" -> "unsigned char";
            case "ushort" -> "unsigned short";
            default -> t.cName();
        };
    }

    static String prototype(Function f, String cName) {
        List<String> ps = new ArrayList<>();
        for (Param p : f.params()) {
            String t = cType(p.type());
            ps.add(switch (p.direction()) {
                case IN -> t + " " + p.name();
                case OUT, OUTOPT, OUTBUF -> t + " *" + p.name();
                case INSTR -> "const char *" + p.name();
                case INBUF -> "const void *" + p.name();
            });
        }
        return "CUresult " + cName + "(" + (ps.isEmpty() ? "void" : String.join(", ", ps)) + ")";
    }

    private String banner() {
        return "/* Generated by io.ivcuda.api.CEmitter from api/cuda-driver.api (api " + api.apiVersion()
                + "). Do not edit. */\n";
    }
}
