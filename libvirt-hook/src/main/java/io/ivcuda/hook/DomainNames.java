package io.ivcuda.hook;

import io.ivcuda.common.config.ServerKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The name of another domain, from its UUID, for messages — found on disk, since a hook must never
 * call libvirt (it would deadlock): the instance configuration the hook wrote when that domain
 * started ({@code runtime.dir/UUID.properties}, key {@code domain.name}), else libvirt's own XML files
 * (persistent definitions in {@code /etc/libvirt/qemu}, running domains' status in
 * {@code /run/libvirt/qemu}). Nothing found: the UUID is all there is to say.
 */
final class DomainNames {
    /** Where the QEMU driver of {@code qemu:///system} keeps persistent definitions and the status of running domains. */
    static final List<Path> LIBVIRT_XML_DIRS = List.of(Path.of("/etc/libvirt/qemu"), Path.of("/run/libvirt/qemu"));
    /** libvirt's files are small; anything larger is not one of them. */
    private static final long MAX_FILE_BYTES = 1 << 20;
    private static final Pattern NAME = Pattern.compile("<name>([^<]{1,200})</name>");

    private final Path runtimeDir;
    private final List<Path> libvirtXmlDirs;

    DomainNames(Path runtimeDir, List<Path> libvirtXmlDirs) {
        this.runtimeDir = runtimeDir;
        this.libvirtXmlDirs = libvirtXmlDirs;
    }

    /** The name of the domain with this UUID, or null when no file names it. */
    String nameOf(String uuid) {
        String name = fromInstanceConfig(uuid);
        return name != null ? name : fromLibvirtXml(uuid);
    }

    /** {@code domain 'NAME'}, or {@code a domain with UUID U} when no file names it. */
    String describe(String uuid) {
        String name = nameOf(uuid);
        return name != null ? "domain '" + name + "'" : "a domain with UUID " + uuid;
    }

    private String fromInstanceConfig(String uuid) {
        Path config = runtimeDir.resolve(uuid + ".properties");
        if (!Files.isRegularFile(config)) {
            return null;
        }
        Properties p = new Properties();
        try (var reader = Files.newBufferedReader(config, StandardCharsets.ISO_8859_1)) {
            p.load(reader);
        } catch (IOException | IllegalArgumentException e) {
            return null;
        }
        String name = ServerKeys.DOMAIN_NAME.textIn(p);
        return name == null || name.isBlank() ? null : name.strip();
    }

    private String fromLibvirtXml(String uuid) {
        String wanted = "<uuid>" + uuid + "</uuid>";
        for (Path dir : libvirtXmlDirs) {
            if (!Files.isDirectory(dir)) {
                continue;
            }
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.xml")) {
                for (Path file : files) {
                    String name = nameIn(file, wanted);
                    if (name != null) {
                        return name;
                    }
                }
            } catch (IOException e) {
                // unreadable directory: the UUID will do
            }
        }
        return null;
    }

    private static String nameIn(Path file, String wantedUuid) {
        try {
            if (!Files.isRegularFile(file) || Files.size(file) > MAX_FILE_BYTES) {
                return null;
            }
            String xml = Files.readString(file, StandardCharsets.UTF_8);
            if (!xml.toLowerCase(java.util.Locale.ROOT).contains(wantedUuid)) {
                return null;
            }
            Matcher name = NAME.matcher(xml);
            return name.find() ? name.group(1).strip() : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
