package io.ivcuda.provisioner;

import io.ivcuda.common.ByteSize;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.VmSettings;
import io.ivcuda.common.config.HostKeys;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * GPU memory reserved on each GPU by the domains that are already provisioned. A domain is placed
 * only if its quota fits in what its GPU's configured capacity leaves; GPUs without a configured
 * capacity take any quota.
 */
class QuotaLedger {
    private final HostConfig host;
    private final Map<Integer, Long> reserved = new HashMap<>();

    QuotaLedger(HostConfig host) {
        this.host = host;
    }

    void reserve(VmSettings settings) {
        reserved.merge(settings.gpuIndex(), settings.memoryQuota(), Long::sum);
    }

    /** Null when {@code settings} fits, else the reason it does not (one line). */
    String refusal(VmSettings settings) {
        OptionalLong capacity = host.gpus().get(settings.gpuIndex()).capacity();
        if (capacity.isEmpty()) {
            return null;
        }
        if (settings.memoryQuota() == 0) {
            return "GPU " + settings.gpuIndex() + " has a configured capacity (" + ByteSize.describe(capacity.getAsLong())
                    + ") so the domain needs a GPU memory quota (attribute quota, or " + HostKeys.DEFAULTS_QUOTA.name() + ")";
        }
        long used = reserved.getOrDefault(settings.gpuIndex(), 0L);
        if (used + settings.memoryQuota() > capacity.getAsLong()) {
            return "GPU memory quota " + ByteSize.describe(settings.memoryQuota()) + " does not fit on GPU "
                    + settings.gpuIndex() + ": capacity " + ByteSize.describe(capacity.getAsLong()) + ", "
                    + ByteSize.describe(used) + " already given to other domains";
        }
        return null;
    }
}
