package io.ivcuda.server.backend;

/**
 * What the NVML operations ask for (api/sharing.api, docs/sharing.md): the {@code what} of
 * ivc_nvml_string and ivc_nvml_value. The guest's libnvidia-ml uses the same numbers.
 */
public final class NvmlQuery {
    // ivc_nvml_string
    public static final int DRIVER_VERSION = 0;
    public static final int NVML_VERSION = 1;
    public static final int NAME = 2;
    public static final int UUID = 3;
    public static final int PCI_BUS_ID = 4;
    public static final int LAST_STRING = PCI_BUS_ID;

    // ivc_nvml_value (arg: the sensor or clock type where one is named)
    public static final int TEMPERATURE = 1;
    public static final int POWER_USAGE = 2;
    public static final int CLOCK = 3;
    public static final int MAX_CLOCK = 4;
    /** gpu | memory << 32 (percent) */
    public static final int UTILIZATION = 5;
    /** major | minor << 32 */
    public static final int COMPUTE_CAPABILITY = 6;
    public static final int MINOR_NUMBER = 7;
    public static final int COMPUTE_MODE = 8;
    public static final int PERSISTENCE_MODE = 9;
    public static final int CUDA_DRIVER_VERSION = 10;
    /** pciDeviceId | pciSubSystemId << 32 */
    public static final int PCI_IDS = 11;
    public static final int LAST_VALUE = PCI_IDS;

    private NvmlQuery() {
    }
}
