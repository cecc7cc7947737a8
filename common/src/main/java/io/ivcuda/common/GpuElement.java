package io.ivcuda.common;

import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import org.w3c.dom.Attr;
import org.w3c.dom.Element;
import org.w3c.dom.NamedNodeMap;

/**
 * The one metadata element a user writes to turn GPU sharing on for a domain:
 * {@code <ivcuda:gpu xmlns:ivcuda="https://ivcuda.dev/xmlns/domain/1" device="0" mode="plain" size="256M" quota="4G" share="25"/>}.
 * Every attribute is optional; missing ones take the host configuration's {@code defaults.*}.
 *
 * @param share the VM's compute share: a percentage of the GPU's SMs (1..100), enforced by NVIDIA's MPS
 *              (docs/sharing.md); 100 is the whole GPU, without MPS
 */
public record GpuElement(Optional<String> device, Optional<Mode> mode, OptionalLong size, OptionalLong quota,
                         OptionalInt share) {

    public static final String NAMESPACE = "https://ivcuda.dev/xmlns/domain/1";
    public static final String PREFIX = "ivcuda";
    public static final String NAME = "gpu";

    public static final String ATTR_DEVICE = "device";
    public static final String ATTR_MODE = "mode";
    public static final String ATTR_SIZE = "size";
    public static final String ATTR_QUOTA = "quota";
    public static final String ATTR_SHARE = "share";
    private static final Set<String> KNOWN = Set.of(ATTR_DEVICE, ATTR_MODE, ATTR_SIZE, ATTR_QUOTA, ATTR_SHARE);
    private static final String KNOWN_WORDS = "device, mode, size, quota, share";

    /** An element without a share (the host's {@code defaults.share}). */
    public GpuElement(Optional<String> device, Optional<Mode> mode, OptionalLong size, OptionalLong quota) {
        this(device, mode, size, quota, OptionalInt.empty());
    }

    /** An element with no attributes: everything from the host's defaults. */
    public static GpuElement allDefaults() {
        return new GpuElement(Optional.empty(), Optional.empty(), OptionalLong.empty(), OptionalLong.empty());
    }

    /**
     * Reads and checks the element's attributes. Only the syntax is checked here; whether the GPU
     * exists and the quota fits is decided against the host configuration by {@link VmSettings}.
     */
    public static GpuElement parse(Element element, String domainName) throws IvcudaConfigException {
        NamedNodeMap attributes = element.getAttributes();
        Optional<String> device = Optional.empty();
        Optional<Mode> mode = Optional.empty();
        OptionalLong size = OptionalLong.empty();
        OptionalLong quota = OptionalLong.empty();
        OptionalInt share = OptionalInt.empty();
        for (int i = 0; i < attributes.getLength(); i++) {
            Attr attr = (Attr) attributes.item(i);
            String name = attr.getLocalName() != null ? attr.getLocalName() : attr.getName();
            if ("xmlns".equals(attr.getPrefix()) || "xmlns".equals(attr.getName())) {
                continue;
            }
            String value = shown(attr.getValue().trim());
            if (!KNOWN.contains(attr.getName())) {
                throw problem(domainName, name, value, "unknown attribute (known: " + KNOWN_WORDS + ")",
                        "unknown attribute " + name + " on <" + PREFIX + ":" + NAME + "> (known: " + KNOWN_WORDS + ")");
            }
            switch (attr.getName()) {
                case ATTR_DEVICE -> {
                    if (!value.matches("[0-9]{1,4}|[A-Za-z0-9-]{8,64}")) {
                        throw problem(domainName, name, value, "not a GPU index (0, 1, …) or a GPU UUID (GPU-…)",
                                "device '" + value + "' is not a GPU index or UUID");
                    }
                    device = Optional.of(value);
                }
                case ATTR_MODE -> {
                    Mode parsed = Mode.fromWord(value);
                    if (parsed == null) {
                        throw problem(domainName, name, value, "unknown mode (use plain or doorbell)",
                                "unknown mode '" + value + "' (use plain or doorbell)");
                    }
                    mode = Optional.of(parsed);
                }
                case ATTR_SIZE -> {
                    long bytes = bytes(domainName, name, value, "region size");
                    String sizeProblem = ByteSize.regionSizeProblem(bytes, value);
                    if (sizeProblem != null) {
                        throw problem(domainName, name, value, sizeProblem + "; a region is a power of two from 1 MiB to "
                                + ByteSize.describe(ByteSize.MAX_REGION_SIZE), sizeProblem);
                    }
                    size = OptionalLong.of(bytes);
                }
                case ATTR_QUOTA -> quota = OptionalLong.of(bytes(domainName, name, value, "quota"));
                case ATTR_SHARE -> share = OptionalInt.of(share(domainName, name, value));
                default -> throw new AssertionError(name);
            }
        }
        return new GpuElement(device, mode, size, quota, share);
    }

    /**
     * A compute share: a whole percentage 1..100, with or without a trailing {@code %}. Zero is no share at
     * all (MPS would refuse the VM's every kernel), and fractions are not what MPS takes.
     */
    private static int share(String domainName, String attribute, String value) throws IvcudaConfigException {
        String digits = value.endsWith("%") ? value.substring(0, value.length() - 1).trim() : value;
        String why = shareProblem(digits);
        if (why != null) {
            throw problem(domainName, attribute, value, why + "; a share is a whole percentage of the GPU's SMs, 1 to 100",
                    "share '" + value + "': " + why + " (1 to 100)");
        }
        return Integer.parseInt(digits);
    }

    /** Why {@code digits} is not a share 1..100, or null when it is one. */
    public static String shareProblem(String digits) {
        if (!digits.matches("[0-9]{1,3}")) {
            return "not a whole number";
        }
        int n = Integer.parseInt(digits);
        return n < 1 ? "zero leaves the VM no SM" : n > 100 ? "more than the whole GPU" : null;
    }

    private static long bytes(String domainName, String attribute, String value, String what) throws IvcudaConfigException {
        try {
            return ByteSize.parse(value);
        } catch (IllegalArgumentException e) {
            throw problem(domainName, attribute, value, e.getMessage(), what + " '" + value + "': " + e.getMessage());
        }
    }

    /**
     * A value as messages show it: on one line (control characters as '?') and at most 40 characters,
     * whatever the user wrote. Checking a shortened value is no loss: every valid value is shorter.
     */
    static String shown(String value) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < value.length() && b.length() < 40; i++) {
            char c = value.charAt(i);
            b.append(Character.isISOControl(c) ? '?' : c);
        }
        return b.length() < value.length() ? b + "…" : b.toString();
    }

    /**
     * A bad attribute: the message names domain, element, attribute and value; {@code summary} says
     * the cause in a few words (see {@link IvcudaConfigException#summary()}).
     */
    static IvcudaConfigException problem(String domainName, String attribute, String value, String reason, String summary) {
        return new IvcudaConfigException(summary, "domain '" + domainName + "': <" + PREFIX + ":" + NAME + "> attribute "
                + attribute + "='" + value + "': " + reason, null);
    }
}
