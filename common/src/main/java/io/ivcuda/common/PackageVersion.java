package io.ivcuda.common;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The version every command prints for {@code --version}: the package's, as dpkg and rpm show it
 * ({@code 0.1.0~SNAPSHOT} for the Maven version {@code 0.1.0-SNAPSHOT}: packaging/build.sh makes the
 * same change, so that a snapshot sorts before its release). It comes from the jar's manifest
 * ({@code Implementation-Version}, written by the build); classes run outside a jar say so.
 */
public final class PackageVersion implements CommandLine.IVersionProvider {
    @Spec
    CommandSpec spec;

    /** The package version of the jar that holds {@code type}, or a word saying there is none. */
    public static String of(Class<?> type) {
        String maven = type.getPackage() == null ? null : type.getPackage().getImplementationVersion();
        return maven == null ? "(not built as a package)" : maven.replace('-', '~');
    }

    @Override
    public String[] getVersion() {
        Object command = spec.root().userObject();
        return new String[] {spec.root().name() + " (ivcuda) " + of(command == null ? PackageVersion.class : command.getClass())};
    }
}
