package io.ivcuda.common;

import java.util.Locale;
import java.util.Map;

/**
 * What one tagged domain gets: its {@link GpuElement} with the host defaults filled in and the GPU
 * resolved against the configured GPUs.
 *
 * @param gpuIndex the configured GPU's index (for quota placement)
 * @param gpu the value passed to the cuda-server's {@code gpu} key: the UUID when the element named one, else the index
 * @param computeShare percentage of the GPU's SMs (1..100; 100: the whole GPU, no MPS)
 */
public record VmSettings(int gpuIndex, String gpu, Mode mode, long regionSize, long memoryQuota, int computeShare) {

    /** The whole GPU: no compute share. */
    public static final int WHOLE_GPU = 100;

    /** Settings with the whole GPU's compute ({@link #WHOLE_GPU}). */
    public VmSettings(int gpuIndex, String gpu, Mode mode, long regionSize, long memoryQuota) {
        this(gpuIndex, gpu, mode, regionSize, memoryQuota, WHOLE_GPU);
    }

    /** Whether the VM gets less than the whole GPU, so its server must be an MPS client. */
    public boolean shared() {
        return computeShare < WHOLE_GPU;
    }

    public static VmSettings resolve(GpuElement element, HostConfig host, String domainName) throws IvcudaConfigException {
        boolean deviceFromElement = element.device().isPresent();
        String device = element.device().orElse(host.defaultDevice());
        Map<Integer, HostConfig.Gpu> gpus = host.gpus();
        int index = -1;
        String gpuForServer;
        if (device.chars().allMatch(Character::isDigit) && !device.isEmpty()) {
            index = Integer.parseInt(device);
            if (!gpus.containsKey(index)) {
                String configured = "this host configures " + gpus.size() + " GPU" + (gpus.size() == 1 ? "" : "s");
                throw unknownGpu(deviceFromElement, domainName, device, host,
                        "no GPU with index " + index + " (" + configured + ")",
                        "no GPU " + index + " on this host (" + configured + ")");
            }
            gpuForServer = Integer.toString(index);
        } else {
            for (HostConfig.Gpu gpu : gpus.values()) {
                if (gpu.uuid() != null && gpu.uuid().toLowerCase(Locale.ROOT).equals(device.toLowerCase(Locale.ROOT))) {
                    index = gpu.index();
                }
            }
            if (index < 0) {
                throw unknownGpu(deviceFromElement, domainName, device, host,
                        "no configured GPU has this UUID (set gpu.<n>.uuid in " + host.origin() + ")",
                        "GPU " + device + " is not configured on this host (gpu.<n>.uuid)");
            }
            gpuForServer = device;
        }
        return new VmSettings(index, gpuForServer,
                element.mode().orElse(host.defaultMode()),
                element.size().orElse(host.defaultSize()),
                element.quota().orElse(host.defaultQuota()),
                element.share().orElse(host.defaultShare()));
    }

    private static IvcudaConfigException unknownGpu(boolean fromElement, String domainName, String device,
                                                    HostConfig host, String reason, String summary) {
        if (fromElement) {
            return GpuElement.problem(domainName, GpuElement.ATTR_DEVICE, device, reason, summary);
        }
        return new IvcudaConfigException("host configuration: defaults.device='" + device + "': " + summary,
                "domain '" + domainName + "': host configuration " + host.origin() + ": defaults.device='" + device + "': " + reason, null);
    }
}
