package io.ivcuda.provisioner;

import io.ivcuda.common.ByteSize;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.common.SlotLedger.Assignment;
import io.ivcuda.common.config.HostKeys;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Which back-end slot a front-end domain gets (issue 16): the one the ledger already gives it while that
 * still fits its element, else a free slot of the back-end it names, or with {@code backend="auto"} of the
 * least loaded back-end that has a free slot and room for its quota. Works on the ledger's assignments in
 * memory; the caller writes them back.
 */
final class SlotPlacement {
    /** A persistent domain as placement needs to know it: a valid back-end, or what else it is. */
    record Known(String name, String uuid, BackendDomain backend, boolean backendRole, boolean frontEnd) {
    }

    private final Map<String, Known> byName;
    private final Map<String, Known> byUuid;
    private final List<Assignment> ledger;
    private final Map<String, Long> quotas;

    /**
     * @param ledger the assignments, changed in place
     * @param quotas each front-end's GPU memory quota by UUID (for back-ends with a capacity)
     */
    SlotPlacement(Map<String, Known> byName, Map<String, Known> byUuid, List<Assignment> ledger, Map<String, Long> quotas) {
        this.byName = byName;
        this.byUuid = byUuid;
        this.ledger = ledger;
        this.quotas = quotas;
    }

    Optional<BackendDomain> backend(String uuid) {
        Known k = byUuid.get(uuid);
        return k == null ? Optional.empty() : Optional.ofNullable(k.backend);
    }

    /**
     * The slot of front-end {@code uuid} (named {@code name}, with {@code quota}, its device in {@code mode}); refused
     * with the reason. A doorbell front-end needs a back-end whose slots are doorbell devices.
     */
    Assignment place(String name, String uuid, String wanted, long quota, Mode mode) throws IvcudaConfigException {
        Optional<Assignment> held = SlotLedger.ofFrontend(ledger, uuid);
        if (GpuElement.AUTO.equals(wanted)) {
            if (held.isPresent() && stillFits(held.get(), quota, mode)) {
                return held.get();
            }
            held.ifPresent(ledger::remove);
            return auto(name, uuid, quota, mode);
        }
        Known named = byName.containsKey(wanted) ? byName.get(wanted) : byUuid.get(wanted.toLowerCase(Locale.ROOT));
        if (named == null) {
            throw refusal(name, wanted, "back-end domain '" + wanted + "' is not defined here");
        }
        if (named.uuid.equals(uuid)) {
            throw refusal(name, wanted, "a domain cannot be its own back-end");
        }
        if (named.backend == null) {
            throw refusal(name, wanted, named.backendRole
                    ? "back-end domain '" + named.name + "' has a problem of its own (see its description)"
                    : named.frontEnd ? "domain '" + named.name + "' is a front-end, not a back-end"
                    : "domain '" + named.name + "' is not a back-end (its element has no " + GpuElement.ATTR_ROLE + "=\""
                    + GpuElement.ROLE_BACKEND + "\")");
        }
        BackendDomain b = named.backend;
        String modeProblem = modeProblem(b, mode);
        if (modeProblem != null) {
            throw refusal(name, wanted, modeProblem);
        }
        if (held.isPresent() && held.get().backendUuid().equals(b.uuid()) && held.get().slot() < b.slots()) {
            String why = roomProblem(b, uuid, quota);
            if (why != null) {
                throw refusal(name, wanted, why);
            }
            return held.get();
        }
        held.ifPresent(ledger::remove);
        int free = freeSlot(b);
        if (free < 0) {
            throw refusal(name, wanted, "back-end domain '" + b.name() + "' has no free slot: its " + b.slots() + " slot"
                    + (b.slots() == 1 ? " is" : "s are") + " held by " + holders(b));
        }
        String why = roomProblem(b, uuid, quota);
        if (why != null) {
            throw refusal(name, wanted, why);
        }
        Assignment a = new Assignment(b.uuid(), free, uuid, name);
        ledger.add(a);
        return a;
    }

    private Assignment auto(String name, String uuid, long quota, Mode mode) throws IvcudaConfigException {
        List<BackendDomain> all = byUuid.values().stream().filter(k -> k.backend != null).map(Known::backend)
                .sorted(Comparator.comparingInt((BackendDomain b) -> SlotLedger.ofBackend(ledger, b.uuid()).size())
                        .thenComparing(BackendDomain::name))
                .toList();
        List<String> why = new ArrayList<>();
        for (BackendDomain b : all) {
            int free = freeSlot(b);
            String room = modeProblem(b, mode) != null ? "its slots are plain" : free < 0 ? "no free slot" : roomProblem(b, uuid, quota);
            if (room == null) {
                Assignment a = new Assignment(b.uuid(), free, uuid, name);
                ledger.add(a);
                return a;
            }
            why.add(b.name() + ": " + room);
        }
        throw refusal(name, GpuElement.AUTO, all.isEmpty() ? "no back-end domain is defined here"
                : "no back-end domain has a free " + (mode == Mode.DOORBELL ? "doorbell " : "") + "slot and room for quota " + ByteSize.describe(quota) + " (" + String.join("; ", why) + ")");
    }

    private boolean stillFits(Assignment held, long quota, Mode mode) {
        Optional<BackendDomain> b = backend(held.backendUuid());
        return b.isPresent() && held.slot() < b.get().slots() && modeProblem(b.get(), mode) == null
                && roomProblem(b.get(), held.frontendUuid(), quota) == null;
    }

    /** Null when back-end {@code b} can serve a front-end in {@code mode}. */
    private static String modeProblem(BackendDomain b, Mode mode) {
        return mode == Mode.DOORBELL && b.mode() != Mode.DOORBELL
                ? "back-end domain '" + b.name() + "' serves plain front-ends only: doorbell needs its slots to be doorbell "
                        + "devices (" + GpuElement.ATTR_MODE + "=\"doorbell\" on the back-end's element)"
                : null;
    }

    private int freeSlot(BackendDomain b) {
        for (int k = 0; k < b.slots(); k++) {
            if (SlotLedger.ofSlot(ledger, b.uuid(), k).isEmpty()) {
                return k;
            }
        }
        return -1;
    }

    /** Null when a front-end with {@code quota} fits within the back-end's capacity beside the others it serves. */
    private String roomProblem(BackendDomain b, String frontendUuid, long quota) {
        OptionalLong capacity = b.capacity();
        if (capacity.isEmpty()) {
            return null;
        }
        if (quota == 0) {
            return "back-end domain '" + b.name() + "' has a capacity (" + ByteSize.describe(capacity.getAsLong())
                    + "), so its front-ends need a GPU memory quota (attribute " + GpuElement.ATTR_QUOTA + ", or "
                    + HostKeys.DEFAULTS_QUOTA.name() + ")";
        }
        long used = 0;
        for (Assignment a : SlotLedger.ofBackend(ledger, b.uuid())) {
            if (!a.frontendUuid().equals(frontendUuid)) {
                used += quotas.getOrDefault(a.frontendUuid(), 0L);
            }
        }
        if (used + quota > capacity.getAsLong()) {
            return "GPU memory quota " + ByteSize.describe(quota) + " does not fit on back-end domain '" + b.name()
                    + "': capacity " + ByteSize.describe(capacity.getAsLong()) + ", " + ByteSize.describe(used)
                    + " already given to its other front-ends";
        }
        return null;
    }

    private String holders(BackendDomain b) {
        return String.join(", ", SlotLedger.ofBackend(ledger, b.uuid()).stream()
                .map(a -> "'" + a.frontendName() + "' (slot " + a.slot() + ")").toList());
    }

    private static IvcudaConfigException refusal(String domain, String value, String summary) {
        return new IvcudaConfigException(summary, "domain '" + domain + "': <" + GpuElement.PREFIX + ":" + GpuElement.NAME
                + "> attribute " + GpuElement.ATTR_BACKEND + "='" + value + "': " + summary, null);
    }
}
