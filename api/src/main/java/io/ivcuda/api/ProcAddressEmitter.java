package io.ivcuda.api;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Writes the guest library's name surface: {@code ivc_proc_addresses.c}, the table
 * {@code cuGetProcAddress} searches (from {@code api/driver-proc-addresses.txt}), and
 * {@code ivc_unimplemented.c}, one stub for every name of the driver's export list
 * ({@code api/driver-580-exports.txt}) that the description does not implement: it answers
 * {@code CUDA_ERROR_NOT_SUPPORTED} and says once on stderr which function was called.
 *
 * <p>So the library exports exactly the driver's names: the description may not export a name
 * the driver does not (generation fails), and every lookup answers a symbol the library defines.
 */
public final class ProcAddressEmitter {

    /** The data files, next to the description. */
    public static final String EXPORTS_FILE = "driver-580-exports.txt";
    public static final String PROC_ADDRESSES_FILE = "driver-proc-addresses.txt";

    private final ApiDescription api;
    private final ProcAddressTable table;
    private final Set<String> driverExports;

    public ProcAddressEmitter(ApiDescription api, ProcAddressTable table, Set<String> driverExports) {
        this.api = api;
        this.table = table;
        this.driverExports = driverExports;
        List<String> problems = new ArrayList<>();
        for (String s : described()) {
            if (!driverExports.contains(s)) {
                problems.add(s + " is exported by the description but not by the driver");
            }
        }
        for (String s : table.symbols()) {
            if (!driverExports.contains(s)) {
                problems.add(s + " answers a lookup in " + PROC_ADDRESSES_FILE + " but the driver does not export it");
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
        }
    }

    /** Loads the data files that sit next to the description file. */
    public static ProcAddressEmitter forDescription(Path descriptionFile, ApiDescription api) throws IOException {
        Path dir = descriptionFile.toAbsolutePath().getParent();
        return new ProcAddressEmitter(api, ProcAddressTable.load(dir.resolve(PROC_ADDRESSES_FILE)),
                ProcAddressTable.loadNames(dir.resolve(EXPORTS_FILE)));
    }

    public void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("ivc_proc_addresses.c"), lookupTable(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("ivc_unimplemented.c"), unimplementedStubs(), StandardCharsets.UTF_8);
    }

    /**
     * The symbols the description's functions define: their exports, the per-thread variants of
     * ptds functions (generated stubs or hand-written with the same name), the unsupported names.
     */
    Set<String> described() {
        Set<String> s = new TreeSet<>();
        for (Function f : api.functions()) {
            f.exports().forEach(e -> s.add(e.symbol()));
            if (f.ptds() && !f.exports().isEmpty()) {
                s.add(f.name() + CEmitter.ptdsSuffix(f));
            }
        }
        s.addAll(api.unsupported());
        return s;
    }

    /** Driver names nobody implements: each gets a NOT_SUPPORTED stub. */
    List<String> unimplemented() {
        Set<String> described = described();
        return driverExports.stream().filter(n -> !described.contains(n)).sorted().toList();
    }

    String lookupTable() {
        StringBuilder s = new StringBuilder();
        s.append(banner(PROC_ADDRESSES_FILE));
        s.append("/* Deliberately no prototypes here: every entry is only an address. */\n");
        s.append("#include \"ivc_proc_addresses.h\"\n\n");
        for (String symbol : table.symbols()) {
            s.append("extern void ").append(symbol).append("(void);\n");
        }
        s.append("\n/* Sorted by base (strcmp), then version: cuGetProcAddress searches it by bisection. */\n");
        s.append("const struct ivc_proc_address ivc_proc_addresses[] = {\n");
        for (ProcAddressTable.Variant v : table.variants()) {
            s.append("    { \"").append(v.base()).append("\", ").append(v.version()).append(", ")
                    .append(v.stream().perThread() ? 1 : 0).append(", ").append(v.symbol()).append(", \"")
                    .append(v.symbol()).append("\" },\n");
        }
        s.append("};\n\nconst size_t ivc_proc_address_count = sizeof ivc_proc_addresses / sizeof ivc_proc_addresses[0];\n");
        return s.toString();
    }

    String unimplementedStubs() {
        StringBuilder s = new StringBuilder();
        s.append(banner(EXPORTS_FILE));
        s.append("/* The driver's names this library does not implement: CUDA_ERROR_NOT_SUPPORTED, and one\n");
        s.append(" * stderr line per name and process saying which. */\n");
        s.append("#include \"ivc_call.h\"\n\n");
        for (String name : unimplemented()) {
            s.append("IVC_EXPORT CUresult ").append(name).append("(void)\n{\n");
            s.append("    static atomic_int logged;\n");
            s.append("    return ivc_unsupported(\"").append(name).append("\", &logged);\n}\n");
        }
        return s.toString();
    }

    private String banner(String source) {
        return "/* Generated by io.ivcuda.api.ProcAddressEmitter from api/" + source + " and api/cuda-driver.api (api "
                + api.apiVersion() + "). Do not edit. */\n";
    }
}
