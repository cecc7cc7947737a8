package io.ivcuda.api;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The parsed {@code api/cuda-driver.api}: the single source of the remoted API.
 * Parsing is strict: any line it does not understand is an error naming the line,
 * because a silently skipped line would make guest and server disagree.
 */
public final class ApiDescription {

    private static final Pattern FN = Pattern.compile(
            "fn\\s+(-|\\d+)\\s+(\\w+)\\s+([a-zA-Z0-9_:\\- ]+?)\\s*\\((.*)\\)\\s*(?:->\\s*(.*))?");
    private static final Pattern RANGE = Pattern.compile("(device|pool)\\[(?:(\\d+)|(\\w+)(?:\\*(\\d+))?)]");
    private static final Pattern PASSTHROUGH = Pattern.compile("(\\d+)\\.\\.(\\d+)");
    private static final Pattern BUF = Pattern.compile("(\\w+)\\[(\\w+)]");
    private static final int DEFAULT_EXPORT_VERSION = 2000;

    private final int apiVersion;
    private final long apiHash;
    private final Map<String, TypeInfo> types;
    private final List<Function> functions;
    private final List<String> unsupported;
    private final List<String> hooked;
    private final List<String> local;
    private final List<WireLayout> layouts;
    private final Map<String, Integer> results;
    private final Map<String, HandleKind> handles;
    private final List<String> sections;

    private ApiDescription(int apiVersion, long apiHash, Map<String, TypeInfo> types, List<Function> functions,
                           List<String> unsupported, List<String> hooked, List<String> local, List<WireLayout> layouts,
                           Map<String, Integer> results, Map<String, HandleKind> handles, List<String> sections) {
        this.apiVersion = apiVersion;
        this.apiHash = apiHash;
        this.types = types;
        this.functions = functions;
        this.unsupported = unsupported;
        this.hooked = hooked;
        this.local = local;
        this.layouts = layouts;
        this.results = results;
        this.handles = handles;
        this.sections = sections;
    }

    /** The CUresults the generated checks answer, by name (in the order described). */
    public Map<String, Integer> results() {
        return results;
    }

    /** The handle kinds, by name (in the order described). */
    public Map<String, HandleKind> handles() {
        return handles;
    }

    /** The server's handler sections, in the order described. */
    public List<String> sections() {
        return sections;
    }

    /** One line of the description, with where it came from (error messages name it). */
    record SourceLine(String source, int number, String text) {
        String where() {
            return source + ":" + number + ": ";
        }
    }

    public int apiVersion() {
        return apiVersion;
    }

    /** FNV-1a 64 of the normalised text (docs/protocol.md §9). */
    public long apiHash() {
        return apiHash;
    }

    public Map<String, TypeInfo> types() {
        return types;
    }

    public List<Function> functions() {
        return functions;
    }

    /** Names that resolve (dlsym and cuGetProcAddress) to a stub answering CUDA_ERROR_NOT_SUPPORTED. */
    public List<String> unsupported() {
        return unsupported;
    }

    /**
     * Generated functions whose stubs call hand-written guest code around the call:
     * {@code ivc_hook_before_<name>(params)} and {@code ivc_hook_after_<name>(result, params)}.
     */
    public List<String> hooked() {
        return hooked;
    }

    /**
     * Generated functions the guest may answer without the server: their stubs first call
     * {@code ivc_local_<name>(params)}, and only when it answers {@code IVC_NOT_LOCAL} go to the wire.
     */
    public List<String> local() {
        return local;
    }

    /** The region's layouts (api/region.layout), in the order described. */
    public List<WireLayout> layouts() {
        return layouts;
    }

    public WireLayout layout(String name) {
        return layouts.stream().filter(l -> l.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no layout " + name + " in the description"));
    }

    /** The protocol version: the value PROTOCOL_VERSION of header.protocol_version. */
    public int protocolVersion() {
        return (int) layout("header").value("PROTOCOL_VERSION").value();
    }

    /** Loads a description file; {@code include <file>} lines are replaced by that file (relative to it). */
    public static ApiDescription load(Path path) throws IOException {
        List<SourceLine> lines = new ArrayList<>();
        read(path, lines, 0);
        return parse(lines);
    }

    private static void read(Path path, List<SourceLine> into, int depth) throws IOException {
        String[] raw = Files.readString(path, StandardCharsets.UTF_8).split("\n", -1);
        for (int i = 0; i < raw.length; i++) {
            String line = normalise(raw[i]);
            if (line.startsWith("include ")) {
                if (depth > 0) {
                    throw new IllegalArgumentException(path + ":" + (i + 1) + ": an included file includes no other");
                }
                read(path.resolveSibling(line.substring("include ".length()).trim()), into, depth + 1);
            } else {
                into.add(new SourceLine(path.toString(), i + 1, raw[i]));
            }
        }
    }

    /** Parses a description without includes (tests). */
    public static ApiDescription parse(String text, String sourceName) {
        List<SourceLine> lines = new ArrayList<>();
        String[] raw = text.split("\n", -1);
        for (int i = 0; i < raw.length; i++) {
            lines.add(new SourceLine(sourceName, i + 1, raw[i]));
        }
        return parse(lines);
    }

    private static ApiDescription parse(List<SourceLine> lines) {
        String sourceName = lines.isEmpty() ? "description" : lines.get(0).source();
        Map<String, TypeInfo> types = new LinkedHashMap<>();
        types.put("char", new TypeInfo("char", WireKind.U32, null, 1, null));
        Map<String, Integer> results = new LinkedHashMap<>();
        Map<String, HandleKind> handles = new LinkedHashMap<>();
        List<String> sections = new ArrayList<>();
        List<Function> functions = new ArrayList<>();
        List<String> unsupported = new ArrayList<>();
        List<String> hooked = new ArrayList<>();
        List<String> local = new ArrayList<>();
        Set<Integer> opcodes = new HashSet<>();
        Set<String> names = new HashSet<>();
        Set<String> symbols = new HashSet<>();
        int apiVersion = 0;
        LayoutParser layouts = new LayoutParser();
        for (SourceLine source : lines) {
            String line = normalise(source.text());
            if (line.isEmpty()) {
                continue;
            }
            String where = source.where();
            try {
                String[] words = line.split(" ");
                if (layouts.accepts(words)) {
                    layouts.line(words);
                    continue;
                }
                switch (words[0]) {
                    case "api" -> apiVersion = Integer.parseInt(words[1]);
                    case "result" -> {
                        expect(words, 3, line);
                        if (results.put(words[1], Integer.parseInt(words[2])) != null) {
                            throw new IllegalArgumentException("result " + words[1] + " described twice");
                        }
                    }
                    case "handle" -> {
                        HandleKind kind = parseHandle(words, results);
                        if (handles.values().stream().anyMatch(h -> h.name().equals(kind.name()) || h.number() == kind.number())) {
                            throw new IllegalArgumentException("handle " + kind.name() + ": name or number used twice");
                        }
                        handles.put(kind.name(), kind);
                    }
                    case "section" -> {
                        expect(words, 2, line);
                        if (sections.contains(words[1]) || !words[1].matches("[a-z]+")) {
                            throw new IllegalArgumentException("section " + words[1] + ": twice, or not a lower-case word");
                        }
                        sections.add(words[1]);
                    }
                    case "type" -> types.put(words[1], parseType(words, handles, results));
                    case "unsupported" -> {
                        for (int w = 1; w < words.length; w++) {
                            if (!symbols.add(words[w])) {
                                throw new IllegalArgumentException("symbol " + words[w] + " exported twice");
                            }
                            unsupported.add(words[w]);
                        }
                    }
                    case "hook" -> {
                        for (int w = 1; w < words.length; w++) {
                            hooked.add(words[w]);
                        }
                    }
                    case "local" -> {
                        for (int w = 1; w < words.length; w++) {
                            local.add(words[w]);
                        }
                    }
                    case "fn" -> {
                        Function f = parseFunction(line, types, results,
                                sections.isEmpty() ? null : sections.get(sections.size() - 1));
                        if (f.opcode() >= 0 && !opcodes.add(f.opcode())) {
                            throw new IllegalArgumentException("opcode " + f.opcode() + " used twice");
                        }
                        if (!names.add(f.name())) {
                            throw new IllegalArgumentException("function " + f.name() + " described twice");
                        }
                        for (Export e : f.exports()) {
                            if (!symbols.add(e.symbol())) {
                                throw new IllegalArgumentException("symbol " + e.symbol() + " exported twice");
                            }
                        }
                        functions.add(f);
                    }
                    default -> throw new IllegalArgumentException("unknown keyword '" + words[0] + "'");
                }
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(where + e.getMessage(), e);
            }
        }
        if (apiVersion == 0) {
            throw new IllegalArgumentException(sourceName + ": missing 'api <cuda-version>' line");
        }
        for (String name : hooked) {
            boolean generated = functions.stream().anyMatch(f -> f.name().equals(name)
                    && (f.mode() == Mode.SYNC || f.mode() == Mode.ASYNC) && !f.exports().isEmpty());
            if (!generated) {
                throw new IllegalArgumentException(sourceName + ": hook " + name
                        + ": only exported sync or async functions have generated stubs to hook");
            }
        }
        for (String name : local) {
            boolean generated = functions.stream().anyMatch(f -> f.name().equals(name)
                    && f.mode() == Mode.SYNC && !f.cached() && !f.exports().isEmpty());
            if (!generated) {
                throw new IllegalArgumentException(sourceName + ": local " + name
                        + ": only exported sync functions that are not cached may be answered locally");
            }
        }
        return new ApiDescription(apiVersion, hash(lines), Map.copyOf(types), List.copyOf(functions),
                List.copyOf(unsupported), List.copyOf(hooked), List.copyOf(local), layouts.finish(sourceName),
                java.util.Collections.unmodifiableMap(results), java.util.Collections.unmodifiableMap(handles),
                List.copyOf(sections));
    }

    /** Drops comments, folds white space: the form the hash is computed over. */
    static String normalise(String line) {
        int hashMark = line.indexOf('#');
        String code = hashMark >= 0 ? line.substring(0, hashMark) : line;
        return code.trim().replaceAll("\\s+", " ");
    }

    /** FNV-1a 64 over the non-empty normalised lines, each followed by '\n'. */
    public static long hash(String text) {
        return hash(java.util.Arrays.stream(text.split("\n", -1)).map(t -> new SourceLine("", 0, t)).toList());
    }

    /** The hash over lines with includes expanded: the layouts are part of the API's identity. */
    private static long hash(List<SourceLine> lines) {
        long h = 0xcbf29ce484222325L;
        for (SourceLine source : lines) {
            String line = normalise(source.text());
            if (line.isEmpty()) {
                continue;
            }
            for (byte b : (line + "\n").getBytes(StandardCharsets.UTF_8)) {
                h ^= (b & 0xff);
                h *= 0x100000001b3L;
            }
        }
        return h;
    }

    private static TypeInfo parseType(String[] words, Map<String, HandleKind> handles, Map<String, Integer> results) {
        String wire = words[2];
        if (wire.equals("i32") && words.length == 5 && words[3].equals("ordinal")) {
            return new TypeInfo(words[1], WireKind.I32, null, 8, result(results, words[4]));
        }
        return switch (wire) {
            case "i32" -> new TypeInfo(words[1], WireKind.I32, null, 8, null);
            case "u32" -> new TypeInfo(words[1], WireKind.U32, null, 8, null);
            case "i64" -> new TypeInfo(words[1], WireKind.I64, null, 8, null);
            case "u64" -> new TypeInfo(words[1], WireKind.U64, null, 8, null);
            case "f32" -> new TypeInfo(words[1], WireKind.F32, null, 8, null);
            case "handle" -> {
                if (!handles.containsKey(words[3])) {
                    throw new IllegalArgumentException("type " + words[1] + ": no 'handle " + words[3] + "' described before");
                }
                yield new TypeInfo(words[1], WireKind.HANDLE, words[3], 8, null);
            }
            case "bytes" -> new TypeInfo(words[1], WireKind.BYTES, null, Integer.parseInt(words[3]), null);
            default -> throw new IllegalArgumentException("unknown wire kind '" + wire + "'");
        };
    }

    private static HandleKind parseHandle(String[] words, Map<String, Integer> results) {
        if (words.length != 4 && !(words.length == 6 && words[4].equals("passthrough"))) {
            throw new IllegalArgumentException("malformed handle line: handle <kind> <number> <result> [passthrough <lo>..<hi>]");
        }
        int number = Integer.parseInt(words[2]);
        if (number < 1 || number > 127) {
            throw new IllegalArgumentException("handle " + words[1] + ": number " + number + " is not in 1..127");
        }
        long lo = -1;
        long hi = -1;
        if (words.length == 6) {
            Matcher m = PASSTHROUGH.matcher(words[5]);
            if (!m.matches() || Long.parseLong(m.group(1)) > Long.parseLong(m.group(2))) {
                throw new IllegalArgumentException("handle " + words[1] + ": passthrough needs <lo>..<hi>");
            }
            lo = Long.parseLong(m.group(1));
            hi = Long.parseLong(m.group(2));
        }
        return new HandleKind(words[1], number, result(results, words[3]), lo, hi);
    }

    private static String result(Map<String, Integer> results, String name) {
        if (!results.containsKey(name)) {
            throw new IllegalArgumentException("no 'result " + name + "' described before");
        }
        return name;
    }

    private static Function parseFunction(String line, Map<String, TypeInfo> types, Map<String, Integer> results,
                                          String section) {
        Matcher m = FN.matcher(line);
        if (!m.matches()) {
            throw new IllegalArgumentException("malformed fn line");
        }
        int opcode = m.group(1).equals("-") ? -1 : Integer.parseInt(m.group(1));
        String name = m.group(2);
        String[] modeWords = m.group(3).trim().split(" ");
        Mode mode = Mode.valueOf(modeWords[0].toUpperCase());
        boolean cached = false;
        boolean ptds = false;
        String streams = null;
        boolean streamsIn = false;
        for (int w = 1; w < modeWords.length; w++) {
            String flag = modeWords[w];
            if (flag.startsWith("streams-in:") || flag.startsWith("streams-out:")) {
                streamsIn = flag.startsWith("streams-in:");
                streams = flag.substring(flag.indexOf(':') + 1);
                continue;
            }
            switch (flag) {
                case "cached" -> cached = true;
                case "ptds" -> ptds = true;
                default -> throw new IllegalArgumentException("unknown flag '" + flag + "'");
            }
        }
        if (mode.onWire() != (opcode >= 0)) {
            throw new IllegalArgumentException(name + ": " + mode + " functions " + (mode.onWire() ? "need" : "take no") + " opcode");
        }
        List<Param> params = new ArrayList<>();
        String paramText = m.group(4).trim();
        if (!paramText.isEmpty()) {
            for (String p : paramText.split(",")) {
                params.add(parseParam(p.trim(), types, results));
            }
        }
        Map<String, Param> byName = new HashMap<>();
        for (Param p : params) {
            if (byName.put(p.name(), p) != null) {
                throw new IllegalArgumentException(name + ": parameter " + p.name() + " twice");
            }
        }
        for (Param p : params) {
            String size = p.check().sizeParam();
            if (size != null && !isInScalar(byName.get(size))) {
                throw new IllegalArgumentException(name + ": the range of " + p.name() + " needs an 'in' scalar " + size);
            }
            if ((p.check().nullable() || p.check().release()) && !p.isHandle()) {
                throw new IllegalArgumentException(name + ": only a handle is nullable or released");
            }
            if (p.check().isRange() && p.type().wire() == WireKind.HANDLE) {
                throw new IllegalArgumentException(name + ": a handle has no range");
            }
        }
        if (streams != null && !isInScalar(byName.get(streams))) {
            throw new IllegalArgumentException(name + ": streams " + streams + " needs an 'in' scalar parameter");
        }
        for (Param p : params) {
            if (p.lengthParam() != null) {
                Param len = byName.get(p.lengthParam());
                if (len == null || len.direction() != Direction.IN || !len.type().wire().isSlot()) {
                    throw new IllegalArgumentException(name + ": length of " + p.name() + " must be an 'in' scalar parameter");
                }
            }
        }
        List<Export> exports = new ArrayList<>();
        if (m.group(5) != null) {
            for (String e : m.group(5).trim().split(" ")) {
                exports.add(parseExport(e));
            }
        }
        if (mode == Mode.CUSTOM && exports.isEmpty()) {
            throw new IllegalArgumentException(name + ": custom functions need exports");
        }
        if (mode == Mode.INTERNAL && !exports.isEmpty()) {
            throw new IllegalArgumentException(name + ": internal functions take no exports");
        }
        return new Function(opcode, name, mode, cached, ptds, List.copyOf(params), List.copyOf(exports), section,
                streams, streamsIn);
    }

    private static boolean isInScalar(Param p) {
        return p != null && p.direction() == Direction.IN && p.type().wire().isSlot() && p.type().wire() != WireKind.HANDLE;
    }

    private static Param parseParam(String text, Map<String, TypeInfo> types, Map<String, Integer> results) {
        String[] w = text.split(" ");
        Direction dir = Direction.valueOf(w[0].toUpperCase());
        return switch (dir) {
            case IN -> {
                if (w.length < 3) {
                    throw new IllegalArgumentException("malformed parameter '" + text + "'");
                }
                yield new Param(dir, type(types, w[1]), w[2], null, parseCheck(w, text, results));
            }
            case OUT, OUTOPT -> {
                expect(w, 3, text);
                yield new Param(dir, type(types, w[1]), w[2], null, ParamCheck.NONE);
            }
            case INSTR -> {
                expect(w, 2, text);
                yield new Param(dir, types.get("char"), w[1], null, ParamCheck.NONE);
            }
            case INBUF -> {
                expect(w, 2, text);
                Matcher b = bufferName(w[1], text);
                yield new Param(dir, types.get("char"), b.group(1), b.group(2), ParamCheck.NONE);
            }
            case OUTBUF -> {
                expect(w, 3, text);
                Matcher b = bufferName(w[2], text);
                yield new Param(dir, type(types, w[1]), b.group(1), b.group(2), ParamCheck.NONE);
            }
        };
    }

    /** The checks after an IN parameter's name: device[n] / pool[n], nullable, release, else RESULT. */
    private static ParamCheck parseCheck(String[] w, String text, Map<String, Integer> results) {
        String space = null;
        String sizeParam = null;
        long sizeConst = 0;
        int multiplier = 1;
        boolean nullable = false;
        boolean release = false;
        String elseResult = null;
        for (int i = 3; i < w.length; i++) {
            Matcher range = RANGE.matcher(w[i]);
            if (range.matches() && space == null) {
                space = range.group(1);
                if (range.group(2) != null) {
                    sizeConst = Long.parseLong(range.group(2));
                } else {
                    sizeParam = range.group(3);
                    multiplier = range.group(4) == null ? 1 : Integer.parseInt(range.group(4));
                }
            } else if (w[i].equals("nullable")) {
                nullable = true;
            } else if (w[i].equals("release")) {
                release = true;
            } else if (w[i].equals("else") && i + 1 < w.length && elseResult == null) {
                elseResult = result(results, w[++i]);
            } else {
                throw new IllegalArgumentException("parameter '" + text + "': unknown check '" + w[i] + "'");
            }
        }
        return new ParamCheck(space, sizeParam, sizeConst, multiplier, nullable, release, elseResult);
    }

    private static Matcher bufferName(String word, String text) {
        Matcher b = BUF.matcher(word);
        if (!b.matches()) {
            throw new IllegalArgumentException("buffer parameter '" + text + "' needs name[length]");
        }
        return b;
    }

    private static void expect(String[] words, int count, String text) {
        if (words.length != count) {
            throw new IllegalArgumentException("malformed parameter '" + text + "'");
        }
    }

    private static TypeInfo type(Map<String, TypeInfo> types, String name) {
        TypeInfo t = types.get(name);
        if (t == null) {
            throw new IllegalArgumentException("unknown type '" + name + "'");
        }
        return t;
    }

    private static Export parseExport(String text) {
        int eq = text.indexOf('=');
        if (eq < 0) {
            return new Export(text, text, DEFAULT_EXPORT_VERSION);
        }
        String symbol = text.substring(0, eq);
        String rest = text.substring(eq + 1);
        int at = rest.indexOf('@');
        if (at < 0) {
            throw new IllegalArgumentException("export '" + text + "' needs symbol=base@version");
        }
        return new Export(symbol, rest.substring(0, at), Integer.parseInt(rest.substring(at + 1)));
    }
}
