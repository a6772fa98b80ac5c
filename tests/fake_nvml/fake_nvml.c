/*
 * A fake NVML (libnvidia-ml) for tests: exports the NVML entry points
 * Trainyard binds, with NVML's signatures and return codes, and answers from
 * GPUs scripted by environment variables read in nvmlInit_v2 (not at load
 * time, since dlopen hands back a cached library):
 *
 *   FAKE_NVML_GPUS            "2xH100-80GB,1xL40S-48GB" (as --fake-gpus);
 *                             unset or empty: no GPUs. A malformed value
 *                             makes nvmlInit_v2 return NVML_ERROR_UNKNOWN.
 *   FAKE_NVML_INIT_ERROR      <code>: nvmlInit_v2 returns it.
 *   FAKE_NVML_DRIVER_VERSION  default "550.54.15".
 *
 * Device i is named "NVIDIA <model>", has UUID
 * "GPU-00000000-0000-4000-8000-<i as 12 hex digits>" and the memory of the
 * model's "-<N>GB" suffix, all free. Initialisation is reference counted as in
 * NVML. Not thread-safe; tests call it from one thread.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

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
  NVML_ERROR_UNKNOWN = 999,
};

#define FAKE_MAX_GPUS 256
#define FAKE_MODEL_MAX 64

struct nvmlDevice_st {
  char name[FAKE_MODEL_MAX + 8];
  char uuid[48];
  unsigned long long memory;
};

static struct nvmlDevice_st g_devices[FAKE_MAX_GPUS];
static unsigned g_count;
static int g_init_refs;

/* Parses one "COUNTxMODEL" part [begin, end) into g_devices; 0 on success. */
static int parsePart(const char* begin, const char* end) {
  while (begin < end && isspace((unsigned char)*begin)) ++begin;
  while (end > begin && isspace((unsigned char)end[-1])) --end;
  unsigned count = 1;
  if (begin < end && isdigit((unsigned char)*begin)) {
    count = 0;
    while (begin < end && isdigit((unsigned char)*begin)) {
      count = count * 10 + (unsigned)(*begin - '0');
      if (count > 64) return -1;
      ++begin;
    }
    if (begin == end || (*begin != 'x' && *begin != 'X') || count == 0) return -1;
    ++begin;
  }
  size_t len = (size_t)(end - begin);
  if (len == 0 || len > FAKE_MODEL_MAX) return -1;

  unsigned long long gib = 0;
  if (len > 3 && (end[-2] == 'G' || end[-2] == 'g') && (end[-1] == 'B' || end[-1] == 'b')) {
    const char* d = end - 2;
    while (d > begin && isdigit((unsigned char)d[-1])) --d;
    if (d < end - 2 && d > begin && d[-1] == '-') {
      for (const char* p = d; p < end - 2; ++p) gib = gib * 10 + (unsigned)(*p - '0');
    }
  }
  for (unsigned k = 0; k < count; ++k) {
    if (g_count >= FAKE_MAX_GPUS) return -1;
    struct nvmlDevice_st* dev = &g_devices[g_count];
    snprintf(dev->name, sizeof dev->name, "NVIDIA %.*s", (int)len, begin);
    snprintf(dev->uuid, sizeof dev->uuid, "GPU-00000000-0000-4000-8000-%012x", g_count);
    dev->memory = gib << 30;
    ++g_count;
  }
  return 0;
}

static int parseGpus(const char* spec) {
  g_count = 0;
  if (spec == NULL || *spec == '\0') return 0;
  const char* part = spec;
  for (;;) {
    const char* comma = strchr(part, ',');
    const char* end = comma != NULL ? comma : part + strlen(part);
    if (parsePart(part, end) != 0) {
      g_count = 0;
      return -1;
    }
    if (comma == NULL) return 0;
    part = comma + 1;
  }
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  const char* forced = getenv("FAKE_NVML_INIT_ERROR");
  if (forced != NULL && *forced != '\0') return atoi(forced);
  if (g_init_refs == 0 && parseGpus(getenv("FAKE_NVML_GPUS")) != 0) return NVML_ERROR_UNKNOWN;
  ++g_init_refs;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_init_refs == 0) g_count = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = g_count;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || index >= g_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return NVML_SUCCESS;
}

/* Copies `text` into buf[length] as NVML does: whole or not at all. */
static nvmlReturn_t copyOut(const char* text, char* buf, unsigned int length) {
  if (buf == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  size_t n = strlen(text);
  if (n + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, text, n + 1);
  return NVML_SUCCESS;
}

static int validDevice(nvmlDevice_t device) {
  return device >= g_devices && device < g_devices + g_count;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device)) return NVML_ERROR_INVALID_ARGUMENT;
  return copyOut(device->name, name, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device)) return NVML_ERROR_INVALID_ARGUMENT;
  return copyOut(device->uuid, uuid, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = device->memory;
  memory->free = device->memory;
  memory->used = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  const char* v = getenv("FAKE_NVML_DRIVER_VERSION");
  return copyOut(v != NULL && *v != '\0' ? v : "550.54.15", version, length);
}
