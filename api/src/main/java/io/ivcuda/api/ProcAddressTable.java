package io.ivcuda.api;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which exported symbol answers {@code cuGetProcAddress(base, cudaVersion, flags)}, as the real
 * driver answers it: the data file {@code api/driver-proc-addresses.txt}, derived (never typed)
 * from CUDA's {@code *Typedefs.h} and checked against {@code cuda.h} and the driver's export list.
 *
 * <p>The facts it rests on: every variant of a driver function has one typedef
 * {@code PFN_<base>_v<version>[_ptds|_ptsz]}, whose version is the CUDA release the variant
 * appeared in; the first variant is the plain symbol and the n-th is {@code <base>_v<n>} (the
 * CUDA programming guide's "Driver Entry Point Access", and {@code cuda.h}'s
 * {@code #define cuMemAlloc cuMemAlloc_v2}); a per-thread-default-stream typedef names the
 * variant in effect at its version with {@code _ptds}/{@code _ptsz} appended (cuda.h's
 * {@code __CUDA_API_PTDS(cuMemcpyHtoD_v2)}). The derivation checks each derived symbol against
 * the export list and each of cuda.h's macros against the newest derived variant; what does not
 * fit is written into the file as a note, so that a human looks at it.
 *
 * <p>Re-run after a CUDA or driver update:
 * {@code java -cp api/target/classes io.ivcuda.api.ProcAddressTable /usr/local/cuda/include
 * api/driver-580-exports.txt api/driver-proc-addresses.txt}
 */
public final class ProcAddressTable {

    /** {@code cuGetProcAddress}'s flag for the per-thread-default-stream variants. */
    public static final long PER_THREAD_DEFAULT_STREAM = 2;

    private static final Pattern TYPEDEF = Pattern.compile("\\bPFN_(cu\\w+?)_v(\\d+)(_ptds|_ptsz)?\\)");
    private static final Pattern MACRO = Pattern.compile(
            "^\\s*#define\\s+(cu\\w+)\\s+(?:__CUDA_API_(PTDS|PTSZ)\\((cu\\w+)\\)|(cu\\w+))\\s*$", Pattern.MULTILINE);

    /** How a variant treats the NULL stream. */
    public enum StreamKind {
        /** The legacy default stream: the plain or {@code _vN} symbol. */
        LEGACY("-"),
        /** Per-thread default stream, synchronous copies and memsets: {@code _ptds}. */
        PTDS("ptds"),
        /** Per-thread default stream, stream-ordered calls: {@code _ptsz}. */
        PTSZ("ptsz");

        private final String word;

        StreamKind(String word) {
            this.word = word;
        }

        public String word() {
            return word;
        }

        public boolean perThread() {
            return this != LEGACY;
        }

        static StreamKind of(String word) {
            for (StreamKind s : values()) {
                if (s.word.equals(word)) {
                    return s;
                }
            }
            throw new IllegalArgumentException("stream '" + word + "' is not -, ptds or ptsz");
        }
    }

    /**
     * One row: {@code cuGetProcAddress(base, v >= version, flags)} may answer {@code symbol}.
     */
    public record Variant(String base, int version, StreamKind stream, String symbol) {
    }

    private static final Comparator<Variant> ORDER = Comparator.comparing(Variant::base)
            .thenComparingInt(Variant::version).thenComparing(Variant::stream);

    private final List<Variant> variants;
    private final List<String> notes;

    private ProcAddressTable(List<Variant> variants, List<String> notes) {
        List<Variant> sorted = new ArrayList<>(variants);
        sorted.sort(ORDER);
        this.variants = List.copyOf(sorted);
        this.notes = List.copyOf(notes);
    }

    /** Rows sorted by base (as C's strcmp orders ASCII), then version, then stream. */
    public List<Variant> variants() {
        return variants;
    }

    /** What the derivation found that does not fit its rules (written into the file as comments). */
    public List<String> notes() {
        return notes;
    }

    /** Every symbol some lookup can answer. */
    public Set<String> symbols() {
        Set<String> s = new TreeSet<>();
        variants.forEach(v -> s.add(v.symbol()));
        return s;
    }

    /**
     * The lookup rule: the newest variant with {@code version <= cudaVersion}; with the
     * per-thread flag, the newest per-thread variant if there is one, else the legacy one.
     *
     * @return the variant, or null when the base is unknown or every variant is newer
     */
    public Variant resolve(String base, int cudaVersion, long flags) {
        Variant legacy = null;
        Variant perThread = null;
        for (Variant v : variants) {
            if (!v.base().equals(base) || v.version() > cudaVersion) {
                continue;
            }
            if (v.stream().perThread()) {
                perThread = v;
            } else {
                legacy = v;
            }
        }
        return (flags & PER_THREAD_DEFAULT_STREAM) != 0 && perThread != null ? perThread : legacy;
    }

    public boolean knows(String base) {
        return variants.stream().anyMatch(v -> v.base().equals(base));
    }

    // ---- derivation ------------------------------------------------------------------

    /**
     * @param typedefHeaders the text of every {@code *Typedefs.h}
     * @param cudaH          the text of {@code cuda.h}
     * @param exports        the driver's exported function names
     */
    public static ProcAddressTable derive(List<String> typedefHeaders, String cudaH, Set<String> exports) {
        Map<String, TreeSet<Integer>> legacyVersions = new TreeMap<>();
        Map<String, TreeMap<Integer, StreamKind>> perThreadVersions = new TreeMap<>();
        for (String text : typedefHeaders) {
            Matcher m = TYPEDEF.matcher(text);
            while (m.find()) {
                String base = m.group(1);
                int version = Integer.parseInt(m.group(2));
                if (m.group(3) == null) {
                    legacyVersions.computeIfAbsent(base, b -> new TreeSet<>()).add(version);
                } else {
                    perThreadVersions.computeIfAbsent(base, b -> new TreeMap<>())
                            .put(version, m.group(3).equals("_ptds") ? StreamKind.PTDS : StreamKind.PTSZ);
                }
            }
        }
        List<Variant> variants = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (Map.Entry<String, TreeSet<Integer>> e : legacyVersions.entrySet()) {
            String base = e.getKey();
            int n = 0;
            for (int version : e.getValue()) {
                String symbol = n == 0 ? base : base + "_v" + (n + 1);
                n++;
                if (exports.contains(symbol)) {
                    variants.add(new Variant(base, version, StreamKind.LEGACY, symbol));
                } else {
                    notes.add("PFN_" + base + "_v" + version + ": the driver exports no " + symbol + "; left out");
                }
            }
        }
        for (Map.Entry<String, TreeMap<Integer, StreamKind>> e : perThreadVersions.entrySet()) {
            String base = e.getKey();
            for (Map.Entry<Integer, StreamKind> p : e.getValue().entrySet()) {
                Variant inEffect = newest(variants, base, p.getKey());
                String symbol = (inEffect == null ? base : inEffect.symbol()) + "_" + p.getValue().word();
                if (exports.contains(symbol)) {
                    variants.add(new Variant(base, p.getKey(), p.getValue(), symbol));
                } else {
                    notes.add("PFN_" + base + "_v" + p.getKey() + "_" + p.getValue().word() + ": the driver exports no "
                            + symbol + "; left out");
                }
            }
        }
        checkMacros(cudaH, variants, notes);
        Set<String> answered = new TreeSet<>();
        variants.forEach(v -> answered.add(v.symbol()));
        List<String> unanswered = exports.stream().filter(s -> !answered.contains(s)).sorted().toList();
        if (!unanswered.isEmpty()) {
            notes.add("exported but named by no typedef, so no cuGetProcAddress lookup answers them ("
                    + unanswered.size() + "): " + String.join(" ", unanswered));
        }
        return new ProcAddressTable(variants, notes);
    }

    private static Variant newest(List<Variant> variants, String base, int atMost) {
        Variant best = null;
        for (Variant v : variants) {
            if (v.base().equals(base) && !v.stream().perThread() && v.version() <= atMost
                    && (best == null || v.version() > best.version())) {
                best = v;
            }
        }
        return best;
    }

    /** cuda.h's {@code #define cuX cuX_vN} names the newest variant: say where the rule disagrees. */
    private static void checkMacros(String cudaH, List<Variant> variants, List<String> notes) {
        Matcher m = MACRO.matcher(cudaH);
        Set<String> seen = new LinkedHashSet<>();
        while (m.find()) {
            String name = m.group(1);
            if (!seen.add(name)) {
                continue;
            }
            String target = m.group(3) != null ? m.group(3) : m.group(4);
            Variant newestLegacy = newest(variants, name, Integer.MAX_VALUE);
            if (newestLegacy == null) {
                continue; // a macro over names with no typedef (none in CUDA 13.0)
            }
            if (!newestLegacy.symbol().equals(target)) {
                notes.add("cuda.h: #define " + name + " " + target + ", but the newest typedef variant of " + name
                        + " is " + newestLegacy.symbol() + " (v" + newestLegacy.version() + "); the table follows the typedefs");
            }
            if (m.group(2) != null) {
                String perThread = target + "_" + m.group(2).toLowerCase();
                boolean present = variants.stream().anyMatch(v -> v.symbol().equals(perThread));
                if (!present) {
                    notes.add("cuda.h: " + name + " has the per-thread form " + perThread + ", which no typedef names");
                }
            }
        }
    }

    // ---- the data file -----------------------------------------------------------------

    public String render(String header) {
        StringBuilder s = new StringBuilder();
        header.lines().forEach(l -> s.append("# ").append(l).append('\n'));
        for (String note : notes) {
            s.append("# note: ").append(note).append('\n');
        }
        s.append("# base version stream symbol\n");
        for (Variant v : variants) {
            s.append(v.base()).append(' ').append(v.version()).append(' ').append(v.stream().word()).append(' ')
                    .append(v.symbol()).append('\n');
        }
        return s.toString();
    }

    public static ProcAddressTable parse(String text, String sourceName) {
        List<Variant> variants = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].trim();
            if (line.startsWith("# note: ")) {
                notes.add(line.substring("# note: ".length()));
            }
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] w = line.split("\\s+");
            if (w.length != 4) {
                throw new IllegalArgumentException(sourceName + ":" + (i + 1) + ": expected 'base version stream symbol'");
            }
            try {
                variants.add(new Variant(w[0], Integer.parseInt(w[1]), StreamKind.of(w[2]), w[3]));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(sourceName + ":" + (i + 1) + ": " + e.getMessage(), e);
            }
        }
        return new ProcAddressTable(variants, notes);
    }

    public static ProcAddressTable load(Path path) throws IOException {
        return parse(Files.readString(path, StandardCharsets.UTF_8), path.toString());
    }

    /** One name a line; blank lines and # comments skipped. */
    public static Set<String> loadNames(Path path) throws IOException {
        Set<String> names = new TreeSet<>();
        for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
            String t = line.trim();
            if (!t.isEmpty() && !t.startsWith("#")) {
                names.add(t);
            }
        }
        return names;
    }

    /** Derives from a CUDA include directory (every {@code *Typedefs.h} and {@code cuda.h}). */
    public static ProcAddressTable derive(Path includeDir, Set<String> exports) throws IOException {
        List<String> typedefs = new ArrayList<>();
        try (java.util.stream.Stream<Path> files = Files.list(includeDir)) {
            for (Path p : files.filter(p -> p.getFileName().toString().endsWith("Typedefs.h")).sorted().toList()) {
                typedefs.add(Files.readString(p, StandardCharsets.ISO_8859_1));
            }
        }
        if (typedefs.isEmpty()) {
            throw new IOException(includeDir + " has no *Typedefs.h (is it a CUDA toolkit's include directory?)");
        }
        String cudaH = Files.readString(includeDir.resolve("cuda.h"), StandardCharsets.ISO_8859_1);
        return derive(typedefs, cudaH, exports);
    }

    /** The header comment of the data file. */
    public static String fileHeader(String cudaVersion) {
        return """
                Which exported symbol answers cuGetProcAddress(base, cudaVersion, flags): the newest row of
                the base with version <= cudaVersion; with flags & 2 (per-thread default stream) the newest
                ptds/ptsz row if there is one. Derived by io.ivcuda.api.ProcAddressTable from CUDA %s's
                *Typedefs.h and cuda.h and checked against driver-580-exports.txt. Do not edit: re-run
                java -cp api/target/classes io.ivcuda.api.ProcAddressTable /usr/local/cuda/include \\
                     api/driver-580-exports.txt api/driver-proc-addresses.txt"""
                .formatted(cudaVersion);
    }

    static String cudaVersion(Path includeDir) throws IOException {
        Matcher m = Pattern.compile("#define CUDA_VERSION (\\d+)")
                .matcher(Files.readString(includeDir.resolve("cuda.h"), StandardCharsets.ISO_8859_1));
        if (!m.find()) {
            return "(unknown version)";
        }
        int v = Integer.parseInt(m.group(1));
        return v / 1000 + "." + v % 1000 / 10;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: ProcAddressTable <cuda-include-dir> <exports-file> <output-file>");
            System.exit(2);
        }
        Path include = Path.of(args[0]);
        ProcAddressTable table = derive(include, loadNames(Path.of(args[1])));
        Files.writeString(Path.of(args[2]), table.render(fileHeader(cudaVersion(include))), StandardCharsets.UTF_8);
        System.out.println(args[2] + ": " + table.variants().size() + " variants of "
                + table.variants().stream().map(Variant::base).distinct().count() + " functions, "
                + table.notes().size() + " notes");
    }
}
