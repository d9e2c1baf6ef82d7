/*
 * STAND-IN FOR TESTS -- not NVIDIA's nvidia-smi.
 *
 * Loads libnvidia-ml.so.1 at run time (dlopen, no rpath) exactly as the real
 * tool does, so inside a container it reports what the library mounted there
 * reports -- on the test bed, the stand-in library and the values file the
 * stand-in runtime mounted for the GPUs that container was given.
 *
 * Supported:
 *   nvidia-smi                  short table (driver, CUDA, one line per GPU)
 *   nvidia-smi -L               "GPU i: NAME (UUID: GPU-...)"
 *   nvidia-smi -q [-x]          the query, as text or as XML (<nvidia_smi_log>)
 * Failures print nvidia-smi's own messages on stdout and exit with its codes:
 *   12 library not found, 9 driver not loaded, 6 no devices, 2 bad arguments.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

typedef struct nvml_device *nvmlDevice_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

static struct {
    int (*init)(void);
    int (*shutdown)(void);
    const char *(*error_string)(int);
    int (*driver_version)(char *, unsigned int);
    int (*cuda_version)(int *);
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, nvmlDevice_t *);
    int (*name)(nvmlDevice_t, char *, unsigned int);
    int (*uuid)(nvmlDevice_t, char *, unsigned int);
    int (*serial)(nvmlDevice_t, char *, unsigned int);
    int (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
    int (*memory)(nvmlDevice_t, nvmlMemory_t *);
    int (*mig)(nvmlDevice_t, unsigned int *, unsigned int *);
    int (*persistence)(nvmlDevice_t, int *);
    int (*minor)(nvmlDevice_t, unsigned int *);
} nvml;

struct gpu {
    char name[96], uuid[96], serial[96];
    nvmlPciInfo_t pci;
    nvmlMemory_t memory;
    int have_serial, have_memory, have_mig, have_persistence, have_minor;
    unsigned int mig_current, mig_pending, minor;
    int persistence;
};

static const char *DRIVER_MESSAGE =
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n";

static const char *LIBRARY_MESSAGE =
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that "
    "the NVIDIA Display Driver is properly installed and present in your system.\n"
    "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n";

static void *symbol(void *lib, const char *first, const char *second)
{
    void *found = dlsym(lib, first);
    if (found == NULL && second != NULL)
        found = dlsym(lib, second);
    return found;
}

static int load_library(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    *(void **)&nvml.init = symbol(lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&nvml.shutdown = symbol(lib, "nvmlShutdown", NULL);
    *(void **)&nvml.error_string = symbol(lib, "nvmlErrorString", NULL);
    *(void **)&nvml.driver_version = symbol(lib, "nvmlSystemGetDriverVersion", NULL);
    *(void **)&nvml.cuda_version = symbol(lib, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
    *(void **)&nvml.count = symbol(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&nvml.handle = symbol(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&nvml.name = symbol(lib, "nvmlDeviceGetName", NULL);
    *(void **)&nvml.uuid = symbol(lib, "nvmlDeviceGetUUID", NULL);
    *(void **)&nvml.serial = symbol(lib, "nvmlDeviceGetSerial", NULL);
    *(void **)&nvml.pci = symbol(lib, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
    *(void **)&nvml.memory = symbol(lib, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&nvml.mig = symbol(lib, "nvmlDeviceGetMigMode", NULL);
    *(void **)&nvml.persistence = symbol(lib, "nvmlDeviceGetPersistenceMode", NULL);
    *(void **)&nvml.minor = symbol(lib, "nvmlDeviceGetMinorNumber", NULL);
    if (!nvml.init || !nvml.shutdown || !nvml.error_string || !nvml.driver_version || !nvml.count ||
        !nvml.handle || !nvml.name || !nvml.uuid || !nvml.pci)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    return NVML_SUCCESS;
}

static int read_gpu(unsigned int index, struct gpu *gpu)
{
    nvmlDevice_t device;
    int ret;

    memset(gpu, 0, sizeof *gpu);
    if ((ret = nvml.handle(index, &device)) != NVML_SUCCESS)
        return ret;
    if ((ret = nvml.name(device, gpu->name, sizeof gpu->name)) != NVML_SUCCESS)
        return ret;
    if ((ret = nvml.uuid(device, gpu->uuid, sizeof gpu->uuid)) != NVML_SUCCESS)
        return ret;
    if ((ret = nvml.pci(device, &gpu->pci)) != NVML_SUCCESS)
        return ret;
    gpu->have_serial = nvml.serial && nvml.serial(device, gpu->serial, sizeof gpu->serial) == NVML_SUCCESS;
    gpu->have_memory = nvml.memory && nvml.memory(device, &gpu->memory) == NVML_SUCCESS;
    gpu->have_mig = nvml.mig && nvml.mig(device, &gpu->mig_current, &gpu->mig_pending) == NVML_SUCCESS;
    gpu->have_persistence = nvml.persistence && nvml.persistence(device, &gpu->persistence) == NVML_SUCCESS;
    gpu->have_minor = nvml.minor && nvml.minor(device, &gpu->minor) == NVML_SUCCESS;
    return NVML_SUCCESS;
}

/* XML text: escape the five characters XML reserves. */
static void xml_text(const char *text)
{
    for (; *text; text++) {
        switch (*text) {
        case '&': fputs("&amp;", stdout); break;
        case '<': fputs("&lt;", stdout); break;
        case '>': fputs("&gt;", stdout); break;
        case '"': fputs("&quot;", stdout); break;
        case '\'': fputs("&apos;", stdout); break;
        default: putchar(*text);
        }
    }
}

static void xml_element(const char *indent, const char *tag, const char *text)
{
    printf("%s<%s>", indent, tag);
    xml_text(text);
    printf("</%s>\n", tag);
}

static const char *mig_word(int have, unsigned int value)
{
    return !have ? "N/A" : value ? "Enabled" : "Disabled";
}

static void timestamp(char *buffer, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(buffer, size, "%a %b %e %H:%M:%S %Y", &tm);
}

static void print_xml(const char *driver, const char *cuda, unsigned int count, struct gpu *list)
{
    char when[64], number[64];
    unsigned int i;
    int major = atoi(driver);

    timestamp(when, sizeof when);
    printf("<?xml version=\"1.0\" ?>\n");
    printf("<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v%d.dtd\">\n", major >= 525 ? 12 : 11);
    printf("<!-- STAND-IN FOR TESTS: values from the test bed's NVML stand-in, not a GPU -->\n");
    printf("<nvidia_smi_log>\n");
    xml_element("\t", "timestamp", when);
    xml_element("\t", "driver_version", driver);
    xml_element("\t", "cuda_version", cuda);
    printf("\t<attached_gpus>%u</attached_gpus>\n", count);
    for (i = 0; i < count; i++) {
        struct gpu *gpu = &list[i];
        printf("\t<gpu id=\"");
        xml_text(gpu->pci.busId);
        printf("\">\n");
        xml_element("\t\t", "product_name", gpu->name);
        xml_element("\t\t", "persistence_mode",
                    !gpu->have_persistence ? "N/A" : gpu->persistence ? "Enabled" : "Disabled");
        printf("\t\t<mig_mode>\n");
        xml_element("\t\t\t", "current_mig", mig_word(gpu->have_mig, gpu->mig_current));
        xml_element("\t\t\t", "pending_mig", mig_word(gpu->have_mig, gpu->mig_pending));
        printf("\t\t</mig_mode>\n");
        xml_element("\t\t", "serial", gpu->have_serial ? gpu->serial : "N/A");
        xml_element("\t\t", "uuid", gpu->uuid);
        if (gpu->have_minor)
            snprintf(number, sizeof number, "%u", gpu->minor);
        xml_element("\t\t", "minor_number", gpu->have_minor ? number : "N/A");
        printf("\t\t<pci>\n");
        printf("\t\t\t<pci_bus>%02X</pci_bus>\n", gpu->pci.bus);
        printf("\t\t\t<pci_device>%02X</pci_device>\n", gpu->pci.device);
        printf("\t\t\t<pci_domain>%04X</pci_domain>\n", gpu->pci.domain);
        printf("\t\t\t<pci_device_id>%08X</pci_device_id>\n", gpu->pci.pciDeviceId);
        xml_element("\t\t\t", "pci_bus_id", gpu->pci.busId);
        printf("\t\t\t<pci_sub_system_id>%08X</pci_sub_system_id>\n", gpu->pci.pciSubSystemId);
        printf("\t\t</pci>\n");
        printf("\t\t<fb_memory_usage>\n");
        if (gpu->have_memory) {
            printf("\t\t\t<total>%llu MiB</total>\n", gpu->memory.total >> 20);
            printf("\t\t\t<used>%llu MiB</used>\n", gpu->memory.used >> 20);
            printf("\t\t\t<free>%llu MiB</free>\n", gpu->memory.free >> 20);
        } else {
            printf("\t\t\t<total>N/A</total>\n\t\t\t<used>N/A</used>\n\t\t\t<free>N/A</free>\n");
        }
        printf("\t\t</fb_memory_usage>\n");
        printf("\t</gpu>\n\n");
    }
    printf("</nvidia_smi_log>\n");
}

static void print_text(const char *driver, const char *cuda, unsigned int count, struct gpu *list)
{
    char when[64];
    unsigned int i;

    timestamp(when, sizeof when);
    printf("\n==============NVSMI LOG==============\n\n");
    printf("%-42s: %s\n", "Timestamp", when);
    printf("%-42s: %s\n", "Driver Version", driver);
    printf("%-42s: %s\n\n", "CUDA Version", cuda);
    printf("%-42s: %u\n", "Attached GPUs", count);
    for (i = 0; i < count; i++) {
        struct gpu *gpu = &list[i];
        printf("GPU %s\n", gpu->pci.busId);
        printf("    %-38s: %s\n", "Product Name", gpu->name);
        printf("    %-38s: %s\n", "Persistence Mode",
               !gpu->have_persistence ? "N/A" : gpu->persistence ? "Enabled" : "Disabled");
        printf("    MIG Mode\n");
        printf("        %-34s: %s\n", "Current", mig_word(gpu->have_mig, gpu->mig_current));
        printf("        %-34s: %s\n", "Pending", mig_word(gpu->have_mig, gpu->mig_pending));
        printf("    %-38s: %s\n", "Serial Number", gpu->have_serial ? gpu->serial : "N/A");
        printf("    %-38s: %s\n", "GPU UUID", gpu->uuid);
        if (gpu->have_minor)
            printf("    %-38s: %u\n", "Minor Number", gpu->minor);
        else
            printf("    %-38s: N/A\n", "Minor Number");
        printf("    PCI\n");
        printf("        %-34s: 0x%02X\n", "Bus", gpu->pci.bus);
        printf("        %-34s: 0x%02X\n", "Device", gpu->pci.device);
        printf("        %-34s: 0x%04X\n", "Domain", gpu->pci.domain);
        printf("        %-34s: 0x%08X\n", "Device Id", gpu->pci.pciDeviceId);
        printf("        %-34s: %s\n", "Bus Id", gpu->pci.busId);
        if (gpu->have_memory) {
            printf("    FB Memory Usage\n");
            printf("        %-34s: %llu MiB\n", "Total", gpu->memory.total >> 20);
            printf("        %-34s: %llu MiB\n", "Used", gpu->memory.used >> 20);
            printf("        %-34s: %llu MiB\n", "Free", gpu->memory.free >> 20);
        }
        printf("\n");
    }
}

static void print_table(const char *driver, const char *cuda, unsigned int count, struct gpu *list)
{
    char when[64];
    unsigned int i;

    timestamp(when, sizeof when);
    printf("%s\n", when);
    printf("+---------------------------------------------------------------------------------------+\n");
    printf("| NVIDIA-SMI %-22sDriver Version: %-15sCUDA Version: %-8s|\n", driver, driver, cuda);
    printf("| STAND-IN FOR TESTS: no GPU behind these values                                        |\n");
    printf("|-----------------------------------------+----------------------+----------------------+\n");
    for (i = 0; i < count; i++) {
        char memory[48] = "N/A";
        if (list[i].have_memory)
            snprintf(memory, sizeof memory, "%lluMiB / %lluMiB", list[i].memory.used >> 20,
                     list[i].memory.total >> 20);
        printf("| %3u  %-34.34s | %-20s | %20s |\n", i, list[i].name, list[i].pci.busId, memory);
    }
    printf("+-----------------------------------------+----------------------+----------------------+\n");
}

static int usage(void)
{
    printf("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n");
    return 2;
}

int main(int argc, char **argv)
{
    int list = 0, query = 0, xml = 0, ret, i;
    unsigned int count, index;
    int cuda = 0;
    char driver[96], cuda_text[32] = "N/A";
    struct gpu *gpus;

    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-L") == 0 || strcmp(arg, "--list-gpus") == 0)
            list = 1;
        else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--query") == 0)
            query = 1;
        else if (strcmp(arg, "-x") == 0 || strcmp(arg, "--xml-format") == 0)
            xml = 1;
        else if (strcmp(arg, "-qx") == 0 || strcmp(arg, "-xq") == 0)
            query = xml = 1;
        else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            printf("NVIDIA System Management Interface -- STAND-IN FOR TESTS\n\n"
                   "    nvidia-smi            short table\n"
                   "    nvidia-smi -L         list GPUs\n"
                   "    nvidia-smi -q [-x]    query, as text or XML\n");
            return 0;
        } else
            return usage();
    }
    if ((list && query) || (xml && !query))
        return usage();

    ret = load_library();
    if (ret == NVML_ERROR_LIBRARY_NOT_FOUND) {
        fputs(LIBRARY_MESSAGE, stdout);
        return 12;
    }
    if (ret != NVML_SUCCESS) {
        printf("NVIDIA-SMI has failed because the NVML library lacks a function it needs.\n");
        return 13;
    }
    ret = nvml.init();
    if (ret == NVML_ERROR_DRIVER_NOT_LOADED) {
        fputs(DRIVER_MESSAGE, stdout);
        return 9;
    }
    if (ret != NVML_SUCCESS) {
        printf("Failed to initialize NVML: %s\n", nvml.error_string(ret));
        return ret > 255 ? 255 : ret;
    }
    if ((ret = nvml.driver_version(driver, sizeof driver)) != NVML_SUCCESS ||
        (ret = nvml.count(&count)) != NVML_SUCCESS) {
        printf("Failed to query the NVIDIA driver: %s\n", nvml.error_string(ret));
        nvml.shutdown();
        return ret > 255 ? 255 : ret;
    }
    if (nvml.cuda_version && nvml.cuda_version(&cuda) == NVML_SUCCESS)
        snprintf(cuda_text, sizeof cuda_text, "%d.%d", cuda / 1000, (cuda % 1000) / 10);
    if (count == 0) {
        printf("No devices were found\n");
        nvml.shutdown();
        return 6;
    }
    gpus = calloc(count, sizeof *gpus);
    if (gpus == NULL) {
        nvml.shutdown();
        return 20;
    }
    for (index = 0; index < count; index++) {
        if ((ret = read_gpu(index, &gpus[index])) != NVML_SUCCESS) {
            printf("Unable to determine the device handle for GPU%u: %s\n", index, nvml.error_string(ret));
            nvml.shutdown();
            return ret > 255 ? 255 : ret;
        }
    }
    if (list) {
        for (index = 0; index < count; index++)
            printf("GPU %u: %s (UUID: %s)\n", index, gpus[index].name, gpus[index].uuid);
    } else if (query && xml) {
        print_xml(driver, cuda_text, count, gpus);
    } else if (query) {
        print_text(driver, cuda_text, count, gpus);
    } else {
        print_table(driver, cuda_text, count, gpus);
    }
    free(gpus);
    nvml.shutdown();
    return 0;
}
