package io.ivcuda.api;

import java.nio.file.Path;

/**
 * Build-time entry point: {@code Generate <description> (--java <dir> | --java-test <dir> | --wire <dir> | --c <dir>)...}.
 * Writes the server's dispatch (Java) and its tests' request encoder, the region's flyweights (Java,
 * module wire) and the guest's stubs and region header (C) from one description; the C side also
 * gets the cuGetProcAddress table and the stubs of the driver's other names from the data files next
 * to the description ({@link ProcAddressEmitter}).
 */
public final class Generate {

    private Generate() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length % 2 == 0) {
            throw new IllegalArgumentException("usage: Generate <description> (--java <dir> | --java-test <dir> | --wire <dir> | --c <dir>)...");
        }
        ApiDescription api = ApiDescription.load(Path.of(args[0]));
        for (int i = 1; i < args.length; i += 2) {
            Path out = Path.of(args[i + 1]);
            switch (args[i]) {
                case "--java" -> new JavaEmitter(api).write(out);
                case "--wire" -> new FlyweightEmitter(api).write(out);
                case "--java-test" -> new TestEncoderEmitter(api).write(out);
                case "--c" -> {
                    new CEmitter(api).write(out);
                    ProcAddressEmitter.forDescription(Path.of(args[0]), api).write(out);
                }
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
    }
}
