package io.ivcuda.common;

import java.util.HashMap;
import java.util.Map;
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
 * <p>The element also gives a domain one of the roles of back-end GPU domains (issue 16,
 * docs/backend-domains.md): {@code role="backend"} makes it a back-end that owns a GPU and serves
 * {@code slots} front-ends; {@code backend="NAME|UUID|auto"} makes it a front-end served by a back-end.
 * Which attributes go with which role is checked here (one element alone); whether the named back-end
 * exists and has a free slot is the provisioner's decision, against every domain.
 *
 * @param share the VM's compute share: a percentage of the GPU's SMs (1..100), enforced by NVIDIA's MPS
 *              (docs/sharing.md); 100 is the whole GPU, without MPS
 * @param backendRole whether the domain is a back-end ({@code role="backend"})
 * @param slots a back-end's number of front-end slots (1..{@link #MAX_SLOTS})
 * @param capacity a back-end's GPU memory that its front-ends' quotas may add up to
 * @param backend a front-end's back-end: a domain name, a domain UUID or {@link #AUTO}
 */
public record GpuElement(Optional<String> device, Optional<Mode> mode, OptionalLong size, OptionalLong quota,
                         OptionalInt share, boolean backendRole, OptionalInt slots, OptionalLong capacity,
                         Optional<String> backend) {

    public static final String NAMESPACE = "https://ivcuda.dev/xmlns/domain/1";
    public static final String PREFIX = "ivcuda";
    public static final String NAME = "gpu";

    public static final String ATTR_DEVICE = "device";
    public static final String ATTR_MODE = "mode";
    public static final String ATTR_SIZE = "size";
    public static final String ATTR_QUOTA = "quota";
    public static final String ATTR_SHARE = "share";
    public static final String ATTR_ROLE = "role";
    public static final String ATTR_SLOTS = "slots";
    public static final String ATTR_CAPACITY = "capacity";
    public static final String ATTR_BACKEND = "backend";
    private static final Set<String> KNOWN = Set.of(ATTR_DEVICE, ATTR_MODE, ATTR_SIZE, ATTR_QUOTA, ATTR_SHARE, ATTR_ROLE,
            ATTR_SLOTS, ATTR_CAPACITY, ATTR_BACKEND);
    private static final String KNOWN_WORDS = "device, mode, size, quota, share, role, slots, capacity, backend";
    /** The one value of {@code role}. */
    public static final String ROLE_BACKEND = "backend";
    /** {@code backend="auto"}: the provisioner chooses the least loaded back-end with room. */
    public static final String AUTO = "auto";
    /** Slots of a back-end whose element names none. */
    public static final int DEFAULT_SLOTS = 4;
    /** The most slots a back-end may have: each is a {@code <shmem>} device of the back-end (one PCI slot each). */
    public static final int MAX_SLOTS = 32;

    /** An element of the host-served kind (no role, no back-end). */
    public GpuElement(Optional<String> device, Optional<Mode> mode, OptionalLong size, OptionalLong quota, OptionalInt share) {
        this(device, mode, size, quota, share, false, OptionalInt.empty(), OptionalLong.empty(), Optional.empty());
    }

    /** Whether the domain is a front-end: its GPU is served by a back-end domain. */
    public boolean frontEnd() {
        return backend.isPresent();
    }

    /** A back-end's number of slots, the default when the element names none. */
    public int slotCount() {
        return slots.orElse(DEFAULT_SLOTS);
    }

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
        boolean backendRole = false;
        OptionalInt slots = OptionalInt.empty();
        OptionalLong capacity = OptionalLong.empty();
        Optional<String> backend = Optional.empty();
        Map<String, String> written = new HashMap<>();
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
            written.put(attr.getName(), value);
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
                case ATTR_ROLE -> {
                    if (!ROLE_BACKEND.equals(value)) {
                        throw problem(domainName, name, value, "unknown role (the one role is " + ROLE_BACKEND
                                + "; a front-end names its back-end with " + ATTR_BACKEND + "=\"NAME\")",
                                "unknown role '" + value + "' (use " + ROLE_BACKEND + ")");
                    }
                    backendRole = true;
                }
                case ATTR_SLOTS -> slots = OptionalInt.of(slots(domainName, name, value));
                case ATTR_CAPACITY -> capacity = OptionalLong.of(bytes(domainName, name, value, "capacity"));
                case ATTR_BACKEND -> {
                    // The whole value, not the shortened one: a name is matched, not shown. libvirt's names have no '/'.
                    String whole = attr.getValue().trim();
                    if (whole.isEmpty() || whole.length() > 200 || whole.chars().anyMatch(c -> c == '/' || Character.isISOControl(c))) {
                        throw problem(domainName, name, value, "not a domain name, a domain UUID or " + AUTO,
                                "back-end '" + value + "' is not a domain name, UUID or " + AUTO);
                    }
                    backend = Optional.of(whole);
                }
                default -> throw new AssertionError(name);
            }
        }
        GpuElement parsed = new GpuElement(device, mode, size, quota, share, backendRole, slots, capacity, backend);
        parsed.checkRole(domainName, written);
        return parsed;
    }

    /**
     * Which attributes go with which role: each refusal names the attribute and says why it has no meaning
     * there, so a user who mixed the two roles sees which word to take out.
     */
    /**
     * The agent inside a back-end tells its control region from its slots by size (exactly 1 MiB) and magic: a
     * slot of that size could be dressed up by its front-end as a second control region.
     */
    public static final String BACKEND_SLOT_SIZE_RULE = "a back-end's slots must be larger than its 1 MiB control region "
            + "(e.g. 256M)";

    private void checkRole(String domainName, Map<String, String> written) throws IvcudaConfigException {
        if (backendRole) {
            // mode on a back-end: doorbell makes its slots ivshmem-doorbell devices, each connected to its front-end's
            // device by the host's relay of that slot, so that it can serve front-ends of both modes
            String misplaced = backend.isPresent() ? ATTR_BACKEND : quota.isPresent() ? ATTR_QUOTA
                    : share.isPresent() ? ATTR_SHARE : null;
            if (misplaced != null) {
                String why = misplaced.equals(ATTR_BACKEND) ? "a back-end cannot itself be served by a back-end"
                        : "quota and share are set per front-end, on each front-end's element";
                throw problem(domainName, misplaced, written.get(misplaced), "not for a back-end (" + ATTR_ROLE + "=\""
                        + ROLE_BACKEND + "\"): " + why, misplaced + " is not for a back-end domain: " + why);
            }
            if (size.isPresent() && size.getAsLong() <= BackendPaths.CONTROL_SIZE) {
                throw problem(domainName, ATTR_SIZE, written.get(ATTR_SIZE), BACKEND_SLOT_SIZE_RULE, BACKEND_SLOT_SIZE_RULE);
            }
            return;
        }
        String backEndOnly = slots.isPresent() ? ATTR_SLOTS : capacity.isPresent() ? ATTR_CAPACITY : null;
        if (backEndOnly != null) {
            throw problem(domainName, backEndOnly, written.get(backEndOnly), "only for a back-end domain (add "
                    + ATTR_ROLE + "=\"" + ROLE_BACKEND + "\")", backEndOnly + " is only for a back-end domain ("
                    + ATTR_ROLE + "=\"" + ROLE_BACKEND + "\")");
        }
        if (backend.isEmpty()) {
            return;
        }
        String named = backend.get();
        if (named.equals(domainName)) {
            throw problem(domainName, ATTR_BACKEND, named, "a domain cannot be its own back-end",
                    "a domain cannot be its own back-end");
        }
        if (device.isPresent()) {
            throw problem(domainName, ATTR_DEVICE, written.get(ATTR_DEVICE), "not for a front-end (" + ATTR_BACKEND + "=\"" + named
                    + "\"): the back-end's element chooses its GPU", "device is not for a front-end: its back-end chooses the GPU");
        }
        // mode="doorbell" on a front-end needs a back-end with mode="doorbell": the provisioner checks that (SlotPlacement)
    }

    /**
     * The mode a back-end's slots or a front-end's device have: plain unless the element says doorbell (the host's
     * {@code defaults.mode} is for host-served VMs: a front-end's mode must match what its back-end offers, and a
     * back-end's slots serve front-ends of both modes only when they are doorbell devices).
     */
    public Mode slotMode() {
        return mode.orElse(Mode.PLAIN);
    }

    private static int slots(String domainName, String attribute, String value) throws IvcudaConfigException {
        int n = value.matches("[0-9]{1,3}") ? Integer.parseInt(value) : -1;
        if (n < 1 || n > MAX_SLOTS) {
            throw problem(domainName, attribute, value, "a back-end serves 1 to " + MAX_SLOTS + " front-ends",
                    "slots '" + value + "': 1 to " + MAX_SLOTS);
        }
        return n;
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
