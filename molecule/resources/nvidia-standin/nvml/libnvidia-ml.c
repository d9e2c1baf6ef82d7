/*
 * STAND-IN FOR TESTS -- not NVIDIA's libnvidia-ml.so.1.
 *
 * The hpc.gpu_containers test bed has no GPU.  This library takes the place
 * of the NVIDIA driver's NVML library on its GPU nodes (and, mounted by the
 * stand-in nvidia-container-runtime, inside their GPU containers) so that
 * every NVML client -- nvidia-ml-py, a plain ctypes binding, the stand-in
 * nvidia-smi -- runs its real code path against values recorded from real
 * devices.
 *
 * Values come from a text file, one per GPU node:
 *   /etc/nvidia-standin/nvml.conf   (NVIDIA_STANDIN_NVML_CONF overrides it)
 * or, where that file is missing, its copy among the device files,
 *   /dev/nvidia-standin-nvml.conf
 * which stands for the kernel driver's state: a container that gets the
 * node's /dev and the driver's libraries but not the node's /etc (udocker
 * after `udocker setup --nvidia`) reaches the values as the real library
 * reaches the driver, through /dev.
 * Format (molecule/resources/nvidia-standin/gpus/README.md): key=value lines,
 * '#' starts a comment (a whole line, or after blank space in a value), blank
 * lines are ignored:
 *   driver_version=535.129.03
 *   cuda_driver_version=12020
 *   gpu.count=N
 *   gpu.<i>.name|uuid|serial|pci_bus_id|pci_device_id|pci_subsystem_id|
 *         memory_total|memory_used|compute_capability|mig_mode|
 *         persistence_mode|minor_number
 *
 * Behaviour at the boundary, as NVML's:
 *   - no values file: every nvmlInit* returns NVML_ERROR_DRIVER_NOT_LOADED
 *     (what NVML says on a node without the kernel module);
 *   - a values file that does not parse: NVML_ERROR_UNKNOWN, and one line
 *     "FILE:LINE: reason" on stderr (the only thing this library prints);
 *   - any other call before init: NVML_ERROR_UNINITIALIZED; init/shutdown
 *     are reference counted;
 *   - a device handle is a pointer into a static table; anything else is
 *     NVML_ERROR_INVALID_ARGUMENT;
 *   - a value the file leaves out (serial, memory, ...) answers
 *     NVML_ERROR_NOT_SUPPORTED, and mig_mode=unsupported too;
 *   - string buffers too small: NVML_ERROR_INSUFFICIENT_SIZE.
 *
 * Structure layouts and return codes are those of nvml.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
};

/* nvml.h: NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)

#define DEFAULT_CONF "/etc/nvidia-standin/nvml.conf"
#define DEVICE_CONF "/dev/nvidia-standin-nvml.conf"
#define CONF_ENV "NVIDIA_STANDIN_NVML_CONF"
#define MAX_GPUS 64
#define TEXT 96

/* Bits of struct standin_gpu.have: which values the file gave. */
enum {
    HAVE_NAME = 1 << 0,
    HAVE_UUID = 1 << 1,
    HAVE_SERIAL = 1 << 2,
    HAVE_BUS_ID = 1 << 3,
    HAVE_DEVICE_ID = 1 << 4,
    HAVE_SUBSYSTEM_ID = 1 << 5,
    HAVE_MEMORY = 1 << 6,
    HAVE_CC = 1 << 7,
    HAVE_MIG = 1 << 8,
    HAVE_PERSISTENCE = 1 << 9,
    HAVE_MINOR = 1 << 10,
    HAVE_MEMORY_USED = 1 << 11,
    REQUIRED = HAVE_NAME | HAVE_UUID | HAVE_BUS_ID | HAVE_MINOR
};

struct standin_gpu {
    unsigned int index;
    unsigned int have;
    char name[TEXT];
    char uuid[TEXT];
    char serial[TEXT];
    char bus_id[32]; /* NVML form: 8-digit domain, upper-case hex */
    unsigned int domain, bus, device, function;
    unsigned int pci_device_id;
    unsigned int pci_subsystem_id;
    unsigned long long memory_total;
    unsigned long long memory_used;
    int cc_major, cc_minor;
    int mig_supported;
    unsigned int mig_current, mig_pending;
    int persistence;
    unsigned int minor_number;
};

static struct standin_gpu gpus[MAX_GPUS];
static unsigned int gpu_count;
static char driver_version[TEXT];
static int cuda_driver_version;
static int have_cuda_version;
static int init_count;

typedef struct standin_gpu *nvmlDevice_t;

/* ---------------------------------------------------------------- parsing */

static char *trim(char *s)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* A '#' after blank space starts a comment; a '#' inside a word does not. */
static void cut_comment(char *value)
{
    char *p;
    for (p = value; *p; p++) {
        if (*p == '#' && (p == value || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            return;
        }
    }
}

static int parse_ulong(const char *text, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long value;
    if (*text == '\0' || *text == '-')
        return -1;
    errno = 0;
    value = strtoull(text, &end, 0);
    if (errno || *end != '\0' || value > max)
        return -1;
    *out = value;
    return 0;
}

static int copy_text(char *dest, const char *value)
{
    if (*value == '\0' || strlen(value) >= TEXT)
        return -1;
    strcpy(dest, value);
    return 0;
}

/* "00000000:07:00.0" or "0000:07:00.0" -> parts and the NVML 8-digit form. */
static int parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus,
                        unsigned int *device, unsigned int *function)
{
    char tail;
    if (sscanf(text, "%x:%x:%x.%x%c", domain, bus, device, function, &tail) != 4)
        return -1;
    if (*bus > 0xff || *device > 0x1f || *function > 7)
        return -1;
    return 0;
}

static const char *set_gpu_value(struct standin_gpu *gpu, const char *field, const char *value)
{
    unsigned long long number;

    if (strcmp(field, "name") == 0) {
        if (copy_text(gpu->name, value))
            return "name: empty or too long";
        gpu->have |= HAVE_NAME;
    } else if (strcmp(field, "uuid") == 0) {
        if (copy_text(gpu->uuid, value))
            return "uuid: empty or too long";
        gpu->have |= HAVE_UUID;
    } else if (strcmp(field, "serial") == 0) {
        if (copy_text(gpu->serial, value))
            return "serial: empty or too long";
        gpu->have |= HAVE_SERIAL;
    } else if (strcmp(field, "pci_bus_id") == 0) {
        if (parse_bus_id(value, &gpu->domain, &gpu->bus, &gpu->device, &gpu->function))
            return "pci_bus_id: not DOMAIN:BUS:DEVICE.FUNCTION";
        snprintf(gpu->bus_id, sizeof gpu->bus_id, "%08X:%02X:%02X.%X", gpu->domain, gpu->bus,
                 gpu->device, gpu->function);
        gpu->have |= HAVE_BUS_ID;
    } else if (strcmp(field, "pci_device_id") == 0) {
        if (parse_ulong(value, 0xffffffffULL, &number))
            return "pci_device_id: not a 32-bit number";
        gpu->pci_device_id = (unsigned int)number;
        gpu->have |= HAVE_DEVICE_ID;
    } else if (strcmp(field, "pci_subsystem_id") == 0) {
        if (parse_ulong(value, 0xffffffffULL, &number))
            return "pci_subsystem_id: not a 32-bit number";
        gpu->pci_subsystem_id = (unsigned int)number;
        gpu->have |= HAVE_SUBSYSTEM_ID;
    } else if (strcmp(field, "memory_total") == 0) {
        if (parse_ulong(value, ~0ULL, &number))
            return "memory_total: not a number of bytes";
        gpu->memory_total = number;
        gpu->have |= HAVE_MEMORY;
    } else if (strcmp(field, "memory_used") == 0) {
        if (parse_ulong(value, ~0ULL, &number))
            return "memory_used: not a number of bytes";
        gpu->memory_used = number;
        gpu->have |= HAVE_MEMORY_USED;
    } else if (strcmp(field, "compute_capability") == 0) {
        char tail;
        if (sscanf(value, "%d.%d%c", &gpu->cc_major, &gpu->cc_minor, &tail) != 2 ||
            gpu->cc_major < 0 || gpu->cc_minor < 0)
            return "compute_capability: not MAJOR.MINOR";
        gpu->have |= HAVE_CC;
    } else if (strcmp(field, "mig_mode") == 0) {
        char tail;
        if (strcmp(value, "unsupported") == 0) {
            gpu->mig_supported = 0;
        } else if (sscanf(value, "%u,%u%c", &gpu->mig_current, &gpu->mig_pending, &tail) == 2 &&
                   gpu->mig_current <= 1 && gpu->mig_pending <= 1) {
            gpu->mig_supported = 1;
        } else {
            return "mig_mode: not CURRENT,PENDING (0 or 1 each) or 'unsupported'";
        }
        gpu->have |= HAVE_MIG;
    } else if (strcmp(field, "persistence_mode") == 0) {
        if (parse_ulong(value, 1, &number))
            return "persistence_mode: not 0 or 1";
        gpu->persistence = (int)number;
        gpu->have |= HAVE_PERSISTENCE;
    } else if (strcmp(field, "minor_number") == 0) {
        if (parse_ulong(value, 0xffffffffULL, &number))
            return "minor_number: not a number";
        gpu->minor_number = (unsigned int)number;
        gpu->have |= HAVE_MINOR;
    } else {
        return "unknown GPU key";
    }
    return NULL;
}

static const char *set_value(const char *key, const char *value, int *count_seen)
{
    unsigned long long number;

    if (strcmp(key, "driver_version") == 0) {
        if (copy_text(driver_version, value))
            return "driver_version: empty or too long";
        return NULL;
    }
    if (strcmp(key, "cuda_driver_version") == 0) {
        if (parse_ulong(value, 0x7fffffffULL, &number))
            return "cuda_driver_version: not NVML's integer (e.g. 12020)";
        cuda_driver_version = (int)number;
        have_cuda_version = 1;
        return NULL;
    }
    if (strcmp(key, "gpu.count") == 0) {
        if (parse_ulong(value, MAX_GPUS, &number))
            return "gpu.count: not a number from 0 to 64";
        gpu_count = (unsigned int)number;
        *count_seen = 1;
        return NULL;
    }
    if (strncmp(key, "gpu.", 4) == 0 && isdigit((unsigned char)key[4])) {
        char *end;
        unsigned long index = strtoul(key + 4, &end, 10);
        if (*end != '.' || index >= MAX_GPUS)
            return "gpu.<index>.<key>: index from 0 to 63 expected";
        return set_gpu_value(&gpus[index], end + 1, value);
    }
    return "unknown key";
}

static void reset(void)
{
    memset(gpus, 0, sizeof gpus);
    gpu_count = 0;
    driver_version[0] = '\0';
    cuda_driver_version = 0;
    have_cuda_version = 0;
}

static nvmlReturn_t load(void)
{
    const char *path = getenv(CONF_ENV);
    char line[1024];
    const char *problem = NULL;
    unsigned int line_number = 0, i, j;
    int count_seen = 0;
    FILE *file;

    if (path == NULL || *path == '\0') {
        path = DEFAULT_CONF;
        if (access(DEFAULT_CONF, F_OK) != 0 && access(DEVICE_CONF, F_OK) == 0)
            path = DEVICE_CONF;
    }
    reset();
    file = fopen(path, "r");
    if (file == NULL)
        return errno == ENOENT || errno == ENOTDIR ? NVML_ERROR_DRIVER_NOT_LOADED
                                                   : NVML_ERROR_NO_PERMISSION;
    while (problem == NULL && fgets(line, sizeof line, file) != NULL) {
        char *key, *value, *eq;
        line_number++;
        if (strchr(line, '\n') == NULL && !feof(file)) {
            problem = "line too long";
            break;
        }
        key = trim(line);
        if (*key == '\0' || *key == '#')
            continue;
        eq = strchr(key, '=');
        if (eq == NULL) {
            problem = "not key=value";
            break;
        }
        *eq = '\0';
        value = eq + 1;
        cut_comment(value);
        problem = set_value(trim(key), trim(value), &count_seen);
    }
    fclose(file);
    if (problem == NULL) {
        line_number = 0;
        if (driver_version[0] == '\0')
            problem = "driver_version missing";
        else if (!count_seen)
            problem = "gpu.count missing";
    }
    for (i = 0; problem == NULL && i < MAX_GPUS; i++) {
        if (i >= gpu_count && gpus[i].have)
            problem = "a gpu.<index> at or above gpu.count";
        else if (i < gpu_count && (gpus[i].have & REQUIRED) != REQUIRED)
            problem = "a GPU lacks name, uuid, pci_bus_id or minor_number";
        for (j = 0; problem == NULL && j < i && i < gpu_count; j++)
            if (strcasecmp(gpus[i].uuid, gpus[j].uuid) == 0 ||
                strcmp(gpus[i].bus_id, gpus[j].bus_id) == 0 ||
                gpus[i].minor_number == gpus[j].minor_number)
                problem = "two GPUs share a uuid, pci_bus_id or minor_number";
        gpus[i].index = i;
    }
    if (problem != NULL) {
        if (line_number)
            fprintf(stderr, "libnvidia-ml (STAND-IN FOR TESTS): %s:%u: %s\n", path, line_number, problem);
        else
            fprintf(stderr, "libnvidia-ml (STAND-IN FOR TESTS): %s: %s\n", path, problem);
        reset();
        return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------- init, errors */

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t ret;
    (void)flags;
    if (init_count > 0) {
        init_count++;
        return NVML_SUCCESS;
    }
    ret = load();
    if (ret == NVML_SUCCESS)
        init_count = 1;
    return ret;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (--init_count == 0)
        reset();
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    default: return "Unknown Error";
    }
}

/* ------------------------------------------------------------------ system */

static nvmlReturn_t put_text(char *buffer, unsigned int length, const char *text)
{
    if (buffer == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buffer, text);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    return put_text(version, length, driver_version);
}

/* NVML's own version: the CUDA major number, then the driver version ("12.535.129.03"). */
EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    char text[2 * TEXT];
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    snprintf(text, sizeof text, "%d.%s", cuda_driver_version / 1000, driver_version);
    return put_text(version, length, text);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (version == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!have_cuda_version)
        return NVML_ERROR_NOT_SUPPORTED;
    *version = cuda_driver_version;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
    return nvmlSystemGetCudaDriverVersion(version);
}

/* ----------------------------------------------------------------- handles */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || index >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &gpus[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    unsigned int i;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < gpu_count; i++) {
        if (strcasecmp(gpus[i].uuid, uuid) == 0) {
            *device = &gpus[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    unsigned int i;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (serial == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < gpu_count; i++) {
        if ((gpus[i].have & HAVE_SERIAL) && strcmp(gpus[i].serial, serial) == 0) {
            *device = &gpus[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* Accepts the NVML form (00000000:07:00.0) and the sysfs form (0000:07:00.0), any case. */
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device)
{
    unsigned int domain, bus, dev, function, i;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (bus_id == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (parse_bus_id(bus_id, &domain, &bus, &dev, &function))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < gpu_count; i++) {
        if (gpus[i].domain == domain && gpus[i].bus == bus && gpus[i].device == dev &&
            gpus[i].function == function) {
            *device = &gpus[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

/* A handle this library gave out, for a GPU that exists now. */
static nvmlReturn_t check(nvmlDevice_t device)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device < &gpus[0] || device >= &gpus[gpu_count] ||
        (size_t)((char *)device - (char *)&gpus[0]) % sizeof gpus[0] != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

#define CHECK(device)                         \
    do {                                      \
        nvmlReturn_t checked_ = check(device); \
        if (checked_ != NVML_SUCCESS)         \
            return checked_;                  \
    } while (0)

/* ------------------------------------------------------------ device values */

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    CHECK(device);
    if (index == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = device->index;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    CHECK(device);
    return put_text(name, length, device->name);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    CHECK(device);
    return put_text(uuid, length, device->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    CHECK(device);
    if (!(device->have & HAVE_SERIAL))
        return serial == NULL ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
    return put_text(serial, length, device->serial);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor)
{
    CHECK(device);
    if (minor == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minor = device->minor_number;
    return NVML_SUCCESS;
}

/*
 * _v2 and _v3 fill the nvmlPciInfo_t above: busIdLegacy gets the
 * 4-digit-domain form, busId NVML's 8-digit form.  The unversioned symbol is
 * the original ABI (before R390), as in NVIDIA's library: a 16-byte busId (the
 * 4-digit form), the five numbers, four reserved words -- 52 bytes, so a
 * caller with the old structure is never written past its end.  (nvml.h maps
 * the unversioned name to _v3 only in C source, not in the library.)
 */
typedef struct {
    char busId[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    unsigned int reserved[4];
} nvmlPciInfo_v1_t;

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    CHECK(device);
    if (pci == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", device->domain & 0xffff,
             device->bus, device->device, device->function);
    memcpy(pci->busId, device->bus_id, sizeof pci->busId);
    pci->domain = device->domain;
    pci->bus = device->bus;
    pci->device = device->device;
    pci->pciDeviceId = device->pci_device_id;
    pci->pciSubSystemId = device->pci_subsystem_id;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return nvmlDeviceGetPciInfo_v3(device, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_v1_t *pci)
{
    nvmlPciInfo_t full;
    nvmlReturn_t ret = nvmlDeviceGetPciInfo_v3(device, pci == NULL ? NULL : &full);
    if (ret != NVML_SUCCESS)
        return ret;
    memset(pci, 0, sizeof *pci);
    memcpy(pci->busId, full.busIdLegacy, sizeof pci->busId);
    pci->domain = full.domain;
    pci->bus = full.bus;
    pci->device = full.device;
    pci->pciDeviceId = full.pciDeviceId;
    pci->pciSubSystemId = full.pciSubSystemId;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    CHECK(device);
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(device->have & HAVE_MEMORY))
        return NVML_ERROR_NOT_SUPPORTED;
    memory->total = device->memory_total;
    memory->used = device->memory_used;
    memory->free = device->memory_total - device->memory_used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    CHECK(device);
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!(device->have & HAVE_MEMORY))
        return NVML_ERROR_NOT_SUPPORTED;
    memory->total = device->memory_total;
    memory->reserved = 0;
    memory->used = device->memory_used;
    memory->free = device->memory_total - device->memory_used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    CHECK(device);
    if (major == NULL || minor == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(device->have & HAVE_CC))
        return NVML_ERROR_NOT_SUPPORTED;
    *major = device->cc_major;
    *minor = device->cc_minor;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
    CHECK(device);
    if (current == NULL || pending == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(device->have & HAVE_MIG) || !device->mig_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = device->mig_current;
    *pending = device->mig_pending;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode)
{
    CHECK(device);
    if (mode == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(device->have & HAVE_PERSISTENCE))
        return NVML_ERROR_NOT_SUPPORTED;
    *mode = device->persistence;
    return NVML_SUCCESS;
}
