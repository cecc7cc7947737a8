/* ivcuda-smi: the VM's view of its GPU through the guest NVML (docs/sharing.md), laid out like
 * nvidia-smi's default table: the device, its memory (with a quota, the VM's use of its quota),
 * utilisation, temperature, power, and this VM's processes. Links libnvidia-ml.so.1, so it shows
 * what every NVML program in the VM sees. Exit 0, or 1 with NVML's reason when NVML cannot start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml_types.h"

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);

#define LINE "+-----------------------------------------------------------------------------+"
#define MIB (1024ull * 1024ull)

static void row(const char *text)
{
    printf("| %-75.75s |\n", text);
}

/* A figure, or "N/A" where NVML does not give it (as nvidia-smi prints). */
static void figure(char *out, size_t size, nvmlReturn_t r, unsigned value, const char *unit)
{
    if (r == NVML_SUCCESS)
        snprintf(out, size, "%u%s", value, unit);
    else
        snprintf(out, size, "N/A");
}

/* The conventions of every ivcuda command (docs/operations.md): "Usage: NAME" with the installed
 * name, "NAME (ivcuda) VERSION" with the package's version, 64 for wrong arguments as the other
 * guest tools (sysexits' EX_USAGE), so scripts and help2man's man page read them all alike. */
#define EXIT_USAGE 64
#ifndef IVCUDA_VERSION
#define IVCUDA_VERSION "(not built as a package)"
#endif

static int usage(FILE *to, int status)
{
    fprintf(to, "Usage: ivcuda-smi [--help] [--version]\n"
                "Shows this VM's view of its GPU through the guest NVML (libnvidia-ml.so.1): name, bus id,\n"
                "temperature, power, utilisation, memory (with a quota, the VM's use of its quota) and this\n"
                "VM's processes.\n"
                "\n"
                "Options:\n"
                "  -h, --help     show this help and exit\n"
                "  -V, --version  print the version and exit\n"
                "\n"
                "Exit status: 0 shown; 1 NVML cannot start (no ivcuda device or no server); 64 wrong arguments\n");
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("ivcuda-smi (ivcuda) %s\n", IVCUDA_VERSION);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return usage(stdout, 0);
    if (argc != 1)
        return usage(stderr, EXIT_USAGE);
    nvmlReturn_t r = nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "ivcuda-smi: NVML cannot start: %s (%d); is this a VM with an ivcuda GPU and its server running?\n",
                nvmlErrorString(r), r);
        return 1;
    }
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A";
    int cuda = 0;
    nvmlSystemGetDriverVersion(driver, sizeof driver);
    nvmlSystemGetCudaDriverVersion_v2(&cuda);
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", localtime(&now));
    printf("%s\n", when);
    printf(LINE "\n");
    char text[128];
    snprintf(text, sizeof text, "ivcuda-smi   Driver Version: %s   CUDA Version: %d.%d", driver, cuda / 1000,
             (cuda % 1000) / 10);
    row(text);
    printf(LINE "\n");
    row("GPU  Name                      Bus-Id            Temp   Power  GPU-Util");
    row("     Memory-Usage (with a quota: the VM's)");
    printf(LINE "\n");

    unsigned count = 0;
    nvmlDeviceGetCount_v2(&count);
    nvmlDevice_t device = NULL;
    for (unsigned i = 0; i < count; i++) {
        if (nvmlDeviceGetHandleByIndex_v2(i, &device) != NVML_SUCCESS)
            continue;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "N/A";
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        nvmlDeviceGetName(device, name, sizeof name);
        nvmlDeviceGetPciInfo_v3(device, &pci);
        unsigned temp = 0, power = 0;
        nvmlUtilization_t util = {0, 0};
        char t[16], p[16], u[16];
        r = nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &temp);
        figure(t, sizeof t, r, temp, "C");
        r = nvmlDeviceGetPowerUsage(device, &power);
        figure(p, sizeof p, r, power / 1000, "W");
        r = nvmlDeviceGetUtilizationRates(device, &util);
        figure(u, sizeof u, r, util.gpu, "%");
        snprintf(text, sizeof text, "%3u  %-24.24s  %-16.16s  %5s  %6s  %8s", i, name, pci.busId, t, p, u);
        row(text);
        nvmlMemory_t memory;
        if (nvmlDeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS)
            snprintf(text, sizeof text, "     %lluMiB / %lluMiB", memory.used / MIB, memory.total / MIB);
        else
            snprintf(text, sizeof text, "     N/A");
        row(text);
    }
    if (count == 0)
        row("No devices were found");
    printf(LINE "\n");
    row("Processes (this VM's):");
    row("  PID        GPU Memory Usage");
    unsigned shown = 0;
    if (device != NULL) {
        nvmlProcessInfo_t infos[128];
        unsigned n = 128;
        if (nvmlDeviceGetComputeRunningProcesses_v3(device, &n, infos) == NVML_SUCCESS) {
            for (unsigned i = 0; i < n; i++) {
                snprintf(text, sizeof text, "  %-10u %lluMiB", infos[i].pid, infos[i].usedGpuMemory / MIB);
                row(text);
                shown++;
            }
        }
    }
    if (shown == 0)
        row("  No running processes found");
    printf(LINE "\n");
    nvmlShutdown();
    return 0;
}
