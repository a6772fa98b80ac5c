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
 *   FAKE_NVML_TOPOLOGY        how the GPUs are linked, as the matrix of
 *                             `nvidia-smi topo -m`: rows separated by ';',
 *                             cells by ',', one of each per GPU, e.g.
 *                             "X,NV4,SYS;NV4,X,SYS;SYS,SYS,X". Cells:
 *                               X         the diagonal
 *                               NV<n>     n NVLinks to that GPU (common
 *                                         ancestor SYS)
 *                               PIX PXB PHB NODE SYS
 *                                         that common ancestor, no NVLink
 *                               -         NVML cannot tell: the common
 *                                         ancestor is NVML_ERROR_NOT_SUPPORTED
 *                             Unset or empty: no GPU has NVLink and no common
 *                             ancestor is known. A malformed matrix, or one
 *                             that does not match FAKE_NVML_GPUS, makes
 *                             nvmlInit_v2 return NVML_ERROR_UNKNOWN. Rows are
 *                             not checked for symmetry, so that tests can
 *                             script what a half-broken NVML reports.
 *
 * What the GPUs are doing, for the sampling entry points, one cell per GPU
 * separated by ',' ("90,0,45": GPU 0 at 90, GPU 1 at 0, GPU 2 at 45). A cell
 * is a number (decimal, or hex with 0x), "-" for NVML_ERROR_NOT_SUPPORTED,
 * "!<code>" for that NVML error, or empty for the default; GPUs past the
 * last cell take the default. Unset: every GPU the default.
 *   FAKE_NVML_GPU_UTIL         % of time a kernel ran               default 0
 *   FAKE_NVML_MEM_UTIL         % of time memory was read/written    default 0
 *   FAKE_NVML_MEMORY_USED_MIB  MiB used (free = total - used)       default 0
 *   FAKE_NVML_TEMPERATURE      degrees C                            default 40
 *   FAKE_NVML_POWER_MW         milliwatts                           default 70000
 *   FAKE_NVML_SM_CLOCK         MHz                                  default 1410
 *   FAKE_NVML_ECC_SBE          single-bit volatile ECC errors       default 0
 *   FAKE_NVML_ECC_DBE          double-bit volatile ECC errors       default 0
 *   FAKE_NVML_THROTTLE_REASONS nvmlClocksThrottleReasons bits       default 0
 *   FAKE_NVML_PROCESSES        compute processes, GPUs separated by ';' and
 *                              processes by ',' as PID:MiB ("PID:-" when
 *                              NVML cannot tell the memory), e.g.
 *                              "100:2048,101:512;;300:100"; a GPU's list may
 *                              also be "-" or "!<code>" as above. Default:
 *                              none.
 * A malformed value, or more cells than GPUs, makes nvmlInit_v2 return
 * NVML_ERROR_UNKNOWN.
 *
 *   FAKE_NVML_XID              XID errors, as GPU:XID separated by ',', e.g.
 *                              "1:79,0:48,1:13". Each is delivered once by
 *                              each event set the GPU is registered in for
 *                              nvmlEventTypeXidCriticalError: the first waits
 *                              after registration answer them in the order
 *                              given, later waits NVML_ERROR_TIMEOUT. "GPU:-"
 *                              makes registering that GPU answer
 *                              NVML_ERROR_NOT_SUPPORTED (as inside some VMs),
 *                              "GPU:!<code>" that NVML error. A GPU out of
 *                              range or a malformed entry makes nvmlInit_v2
 *                              return NVML_ERROR_UNKNOWN. Default: none.
 *
 * Device i is named "NVIDIA <model>", has UUID
 * "GPU-00000000-0000-4000-8000-<i as 12 hex digits>", the memory of the
 * model's "-<N>GB" suffix, all free, and PCI bus id "00000000:<i+1 as 2 hex
 * digits>:00.0". A GPU's NVLinks are numbered from 0 in the order of its
 * row: with "X,NV2,NV1" links 0 and 1 go to GPU 1 and link 2 to GPU 2;
 * nvmlDeviceGetNvLinkState answers for links 0..NVML_NVLINK_MAX_LINKS-1 of a
 * GPU with at least one NVLink and NVML_ERROR_NOT_SUPPORTED for one without.
 * Initialisation is reference counted as in NVML. Not thread-safe; tests call
 * it from one thread.
 *
 * Built with FAKE_NVML_NO_TOPOLOGY or FAKE_NVML_NO_SAMPLING, the library lacks
 * the topology or the sampling entry points (the event ones included), as
 * older drivers do. Built with FAKE_NVML_NO_EVENT_WAIT_V2, it lacks
 * nvmlEventSetWait_v2 and its nvmlEventSetWait fills the shorter
 * nvmlEventData_t of drivers before MIG.
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
/* As nvml.h lays it out. */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
} nvmlGpuTopologyLevel_t;
typedef enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;
/* As the _v3 process queries fill it. */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;
typedef enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;
typedef enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 } nvmlClockType_t;
typedef enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;
typedef enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 } nvmlEccCounterType_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
/* As nvml.h lays it out for nvmlEventSetWait_v2. */
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
/* What nvmlEventSetWait filled before MIG: a prefix of nvmlEventData_t. */
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
} fakeEventDataV1;
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_NVLINK_MAX_LINKS 18

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

/* From FAKE_NVML_TOPOLOGY: the common ancestor of each pair (-1: unknown)
 * and the peer at the end of each NVLink (-1: no link). */
#define FAKE_UNKNOWN (-1)
static int g_level[FAKE_MAX_GPUS][FAKE_MAX_GPUS];
static int g_link_peer[FAKE_MAX_GPUS][NVML_NVLINK_MAX_LINKS];

/* One scripted reading: a value, or the error NVML answers instead. */
struct fakeValue {
  unsigned long long value;
  nvmlReturn_t rc;
};
enum {
  F_GPU_UTIL,
  F_MEM_UTIL,
  F_MEMORY_USED_MIB,
  F_TEMPERATURE,
  F_POWER_MW,
  F_SM_CLOCK,
  F_ECC_SBE,
  F_ECC_DBE,
  F_THROTTLE,
  F_COUNT
};
static const struct {
  const char* env;
  unsigned long long fallback;
} kFields[F_COUNT] = {
    {"FAKE_NVML_GPU_UTIL", 0},     {"FAKE_NVML_MEM_UTIL", 0},     {"FAKE_NVML_MEMORY_USED_MIB", 0},
    {"FAKE_NVML_TEMPERATURE", 40}, {"FAKE_NVML_POWER_MW", 70000}, {"FAKE_NVML_SM_CLOCK", 1410},
    {"FAKE_NVML_ECC_SBE", 0},      {"FAKE_NVML_ECC_DBE", 0},      {"FAKE_NVML_THROTTLE_REASONS", 0},
};
static struct fakeValue g_values[FAKE_MAX_GPUS][F_COUNT];

/* From FAKE_NVML_PROCESSES. */
#define FAKE_MAX_PROCESSES 128
struct fakeProcesses {
  nvmlReturn_t rc;
  unsigned count;
  unsigned pid[FAKE_MAX_PROCESSES];
  unsigned long long mib[FAKE_MAX_PROCESSES]; /* NVML_VALUE_NOT_AVAILABLE: "PID:-" */
};
static struct fakeProcesses g_processes[FAKE_MAX_GPUS];

/* From FAKE_NVML_XID: the scripted XIDs in order, and how registering each
 * GPU for events answers. */
#define FAKE_MAX_XIDS 64
struct fakeXid {
  unsigned gpu;
  unsigned long long xid;
};
static struct fakeXid g_xids[FAKE_MAX_XIDS];
static unsigned g_xid_count;
static nvmlReturn_t g_register_rc[FAKE_MAX_GPUS];

/* An event set: the event types each GPU is registered for, and which
 * scripted XIDs it has delivered. */
struct nvmlEventSet_st {
  unsigned long long types[FAKE_MAX_GPUS];
  unsigned char delivered[FAKE_MAX_XIDS];
};

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

/* Reads one cell [begin, end) at row r, column c; 0 on success. */
static int parseCell(const char* begin, const char* end, unsigned r, unsigned c, int* next_link) {
  while (begin < end && isspace((unsigned char)*begin)) ++begin;
  while (end > begin && isspace((unsigned char)end[-1])) --end;
  size_t len = (size_t)(end - begin);
  static const struct {
    const char* name;
    int level;
  } kLevels[] = {{"PIX", NVML_TOPOLOGY_SINGLE},     {"PXB", NVML_TOPOLOGY_MULTIPLE},
                 {"PHB", NVML_TOPOLOGY_HOSTBRIDGE}, {"NODE", NVML_TOPOLOGY_NODE},
                 {"SYS", NVML_TOPOLOGY_SYSTEM},     {"-", FAKE_UNKNOWN}};
  if (len == 1 && *begin == 'X') return r == c ? 0 : -1;
  if (r == c) return -1;
  for (size_t k = 0; k < sizeof kLevels / sizeof kLevels[0]; ++k) {
    if (strlen(kLevels[k].name) == len && strncmp(kLevels[k].name, begin, len) == 0) {
      g_level[r][c] = kLevels[k].level;
      return 0;
    }
  }
  if (len < 3 || strncmp(begin, "NV", 2) != 0) return -1;
  int n = 0;
  for (const char* p = begin + 2; p < end; ++p) {
    if (!isdigit((unsigned char)*p)) return -1;
    n = n * 10 + (*p - '0');
    if (n > NVML_NVLINK_MAX_LINKS) return -1;
  }
  if (n == 0 || *next_link + n > NVML_NVLINK_MAX_LINKS) return -1;
  for (int k = 0; k < n; ++k) g_link_peer[r][(*next_link)++] = (int)c;
  g_level[r][c] = NVML_TOPOLOGY_SYSTEM;
  return 0;
}

/* Parses FAKE_NVML_TOPOLOGY for the g_count GPUs; 0 on success. */
static int parseTopology(const char* spec) {
  for (unsigned i = 0; i < FAKE_MAX_GPUS; ++i) {
    for (unsigned j = 0; j < FAKE_MAX_GPUS; ++j) g_level[i][j] = FAKE_UNKNOWN;
    for (unsigned k = 0; k < NVML_NVLINK_MAX_LINKS; ++k) g_link_peer[i][k] = -1;
  }
  if (spec == NULL || *spec == '\0') return 0;
  unsigned r = 0;
  for (const char* row = spec;; ++r) {
    const char* row_end = strchr(row, ';');
    if (row_end == NULL) row_end = row + strlen(row);
    if (r >= g_count) return -1;
    unsigned c = 0;
    int next_link = 0;
    for (const char* cell = row;; ++c) {
      const char* cell_end = memchr(cell, ',', (size_t)(row_end - cell));
      if (cell_end == NULL) cell_end = row_end;
      if (c >= g_count || parseCell(cell, cell_end, r, c, &next_link) != 0) return -1;
      if (cell_end == row_end) break;
      cell = cell_end + 1;
    }
    if (c + 1 != g_count) return -1;
    if (*row_end == '\0') break;
    row = row_end + 1;
  }
  return r + 1 == g_count ? 0 : -1;
}

/* Trims [*begin, *end) of white space. */
static void trimRange(const char** begin, const char** end) {
  while (*begin < *end && isspace((unsigned char)**begin)) ++*begin;
  while (*end > *begin && isspace((unsigned char)(*end)[-1])) --*end;
}

/* Parses an unsigned number filling all of [begin, end); 0 on success. */
static int parseNumber(const char* begin, const char* end, unsigned long long* out) {
  char buf[32];
  size_t len = (size_t)(end - begin);
  if (len == 0 || len >= sizeof buf || !isdigit((unsigned char)*begin)) return -1;
  memcpy(buf, begin, len);
  buf[len] = '\0';
  char* stop = NULL;
  *out = strtoull(buf, &stop, 0);
  return *stop == '\0' ? 0 : -1;
}

/* "-" or "!<code>" in [begin, end): sets *rc and returns 1; 0 when the text
 * is neither; -1 when malformed. */
static int parseErrorCell(const char* begin, const char* end, nvmlReturn_t* rc) {
  if (end - begin == 1 && *begin == '-') {
    *rc = NVML_ERROR_NOT_SUPPORTED;
    return 1;
  }
  if (begin < end && *begin == '!') {
    unsigned long long code = 0;
    if (parseNumber(begin + 1, end, &code) != 0 || code == NVML_SUCCESS || code > 100000) return -1;
    *rc = (nvmlReturn_t)code;
    return 1;
  }
  return 0;
}

/* Parses one per-GPU list of kFields[field] into g_values; 0 on success. */
static int parseField(int field) {
  for (unsigned i = 0; i < FAKE_MAX_GPUS; ++i) {
    g_values[i][field].value = kFields[field].fallback;
    g_values[i][field].rc = NVML_SUCCESS;
  }
  const char* spec = getenv(kFields[field].env);
  if (spec == NULL || *spec == '\0') return 0;
  unsigned gpu = 0;
  for (const char* cell = spec;; ++gpu) {
    const char* cell_end = strchr(cell, ',');
    if (cell_end == NULL) cell_end = cell + strlen(cell);
    if (gpu >= g_count) return -1;
    const char* b = cell;
    const char* e = cell_end;
    trimRange(&b, &e);
    struct fakeValue* v = &g_values[gpu][field];
    int err = parseErrorCell(b, e, &v->rc);
    if (err < 0) return -1;
    if (err == 0 && b < e && parseNumber(b, e, &v->value) != 0) return -1;
    if (*cell_end == '\0') return 0;
    cell = cell_end + 1;
  }
}

/* Parses FAKE_NVML_PROCESSES into g_processes; 0 on success. */
static int parseProcesses(void) {
  memset(g_processes, 0, sizeof g_processes);
  const char* spec = getenv("FAKE_NVML_PROCESSES");
  if (spec == NULL || *spec == '\0') return 0;
  unsigned gpu = 0;
  for (const char* list = spec;; ++gpu) {
    const char* list_end = strchr(list, ';');
    if (list_end == NULL) list_end = list + strlen(list);
    if (gpu >= g_count) return -1;
    struct fakeProcesses* procs = &g_processes[gpu];
    const char* lb = list;
    const char* le = list_end;
    trimRange(&lb, &le);
    int err = parseErrorCell(lb, le, &procs->rc);
    if (err < 0) return -1;
    for (const char* item = lb; err == 0 && item < le;) {
      const char* item_end = memchr(item, ',', (size_t)(le - item));
      if (item_end == NULL) item_end = le;
      const char* colon = memchr(item, ':', (size_t)(item_end - item));
      if (colon == NULL || procs->count >= FAKE_MAX_PROCESSES) return -1;
      const char* pb = item;
      const char* pe = colon;
      const char* mb = colon + 1;
      const char* me = item_end;
      trimRange(&pb, &pe);
      trimRange(&mb, &me);
      unsigned long long pid = 0;
      unsigned long long mib = NVML_VALUE_NOT_AVAILABLE;
      if (parseNumber(pb, pe, &pid) != 0 || pid == 0 || pid > 0xFFFFFFFFu) return -1;
      if (!(me - mb == 1 && *mb == '-') && parseNumber(mb, me, &mib) != 0) return -1;
      procs->pid[procs->count] = (unsigned)pid;
      procs->mib[procs->count] = mib;
      ++procs->count;
      item = item_end < le ? item_end + 1 : le;
    }
    if (*list_end == '\0') return 0;
    list = list_end + 1;
  }
}

/* Parses FAKE_NVML_XID into g_xids and g_register_rc; 0 on success. */
static int parseXids(void) {
  g_xid_count = 0;
  for (unsigned i = 0; i < FAKE_MAX_GPUS; ++i) g_register_rc[i] = NVML_SUCCESS;
  const char* spec = getenv("FAKE_NVML_XID");
  if (spec == NULL || *spec == '\0') return 0;
  for (const char* item = spec;;) {
    const char* item_end = strchr(item, ',');
    if (item_end == NULL) item_end = item + strlen(item);
    const char* colon = memchr(item, ':', (size_t)(item_end - item));
    if (colon == NULL) return -1;
    const char* gb = item;
    const char* ge = colon;
    const char* xb = colon + 1;
    const char* xe = item_end;
    trimRange(&gb, &ge);
    trimRange(&xb, &xe);
    unsigned long long gpu = 0;
    if (parseNumber(gb, ge, &gpu) != 0 || gpu >= g_count) return -1;
    int err = parseErrorCell(xb, xe, &g_register_rc[gpu]);
    if (err < 0) return -1;
    if (err == 0) {
      unsigned long long xid = 0;
      if (parseNumber(xb, xe, &xid) != 0 || g_xid_count >= FAKE_MAX_XIDS) return -1;
      g_xids[g_xid_count].gpu = (unsigned)gpu;
      g_xids[g_xid_count].xid = xid;
      ++g_xid_count;
    }
    if (*item_end == '\0') return 0;
    item = item_end + 1;
  }
}

/* The readings of FAKE_NVML_GPU_UTIL and the rest; 0 on success. */
static int parseReadings(void) {
  for (int f = 0; f < F_COUNT; ++f) {
    if (parseField(f) != 0) return -1;
  }
  if (parseProcesses() != 0) return -1;
  return parseXids();
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  const char* forced = getenv("FAKE_NVML_INIT_ERROR");
  if (forced != NULL && *forced != '\0') return atoi(forced);
  if (g_init_refs == 0 && parseGpus(getenv("FAKE_NVML_GPUS")) != 0) return NVML_ERROR_UNKNOWN;
  if (g_init_refs == 0 &&
      (parseTopology(getenv("FAKE_NVML_TOPOLOGY")) != 0 || parseReadings() != 0)) {
    g_count = 0;
    return NVML_ERROR_UNKNOWN;
  }
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
  const struct fakeValue* used = &g_values[device - g_devices][F_MEMORY_USED_MIB];
  if (used->rc != NVML_SUCCESS) return used->rc;
  unsigned long long used_bytes = used->value << 20;
  if (used_bytes > device->memory) used_bytes = device->memory;
  memory->total = device->memory;
  memory->used = used_bytes;
  memory->free = device->memory - used_bytes;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  const char* v = getenv("FAKE_NVML_DRIVER_VERSION");
  return copyOut(v != NULL && *v != '\0' ? v : "550.54.15", version, length);
}

/* Built with FAKE_NVML_NO_TOPOLOGY, the library stands for an older driver
 * without the topology entry points. */
#ifndef FAKE_NVML_NO_TOPOLOGY
static void pciInfo(unsigned index, nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof *pci);
  pci->domain = (index + 1) / 256;
  pci->bus = (index + 1) % 256;
  pci->pciDeviceId = 0x20B510DE; /* A100 80GB, NVIDIA's vendor id */
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:00.0", pci->domain, pci->bus);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:00.0", pci->domain, pci->bus);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  pciInfo((unsigned)(device - g_devices), pci);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                             nvmlDevice_t device2,
                                                             nvmlGpuTopologyLevel_t* path) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device1) || !validDevice(device2) || path == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  int level = g_level[device1 - g_devices][device2 - g_devices];
  if (device1 == device2) level = NVML_TOPOLOGY_INTERNAL;
  if (level == FAKE_UNKNOWN) return NVML_ERROR_NOT_SUPPORTED;
  *path = (nvmlGpuTopologyLevel_t)level;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                  nvmlEnableState_t* is_active) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || is_active == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const int* peers = g_link_peer[device - g_devices];
  if (peers[0] < 0) return NVML_ERROR_NOT_SUPPORTED; /* links are given from 0 up */
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  *is_active = peers[link] >= 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                             nvmlPciInfo_t* pci) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || pci == NULL || link >= NVML_NVLINK_MAX_LINKS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  int peer = g_link_peer[device - g_devices][link];
  if (peer < 0) return NVML_ERROR_NOT_SUPPORTED;
  pciInfo((unsigned)peer, pci);
  return NVML_SUCCESS;
}
#endif /* FAKE_NVML_NO_TOPOLOGY */

#ifndef FAKE_NVML_NO_SAMPLING
/* Answers reading `field` of `device` into *out (when the reading is not a
 * scripted error). */
static nvmlReturn_t reading(nvmlDevice_t device, int field, unsigned long long* out) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const struct fakeValue* v = &g_values[device - g_devices][field];
  if (v->rc != NVML_SUCCESS) return v->rc;
  *out = v->value;
  return NVML_SUCCESS;
}

static nvmlReturn_t readingUint(nvmlDevice_t device, int field, unsigned int* out) {
  unsigned long long value = 0;
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t rc = reading(device, field, &value);
  if (rc == NVML_SUCCESS) *out = (unsigned int)value;
  return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t* utilization) {
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlUtilization_t u;
  nvmlReturn_t rc = readingUint(device, F_GPU_UTIL, &u.gpu);
  if (rc == NVML_SUCCESS) rc = readingUint(device, F_MEM_UTIL, &u.memory);
  if (rc == NVML_SUCCESS) *utilization = u;
  return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                  nvmlTemperatureSensors_t sensor,
                                                  unsigned int* temp) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return readingUint(device, F_TEMPERATURE, temp);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return readingUint(device, F_POWER_MW, power);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int* clock) {
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED; /* only the SM clock is scripted */
  return readingUint(device, F_SM_CLOCK, clock);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                     nvmlMemoryErrorType_t error_type,
                                                     nvmlEccCounterType_t counter_type,
                                                     unsigned long long* count) {
  if (counter_type != NVML_VOLATILE_ECC) return NVML_ERROR_NOT_SUPPORTED;
  switch (error_type) {
    case NVML_MEMORY_ERROR_TYPE_CORRECTED:
      return reading(device, F_ECC_SBE, count);
    case NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
      return reading(device, F_ECC_DBE, count);
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                   unsigned long long* reasons) {
  return reading(device, F_THROTTLE, reasons);
}

/* As NVML: with too small a buffer, *count becomes the count needed and the
 * answer NVML_ERROR_INSUFFICIENT_SIZE. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const struct fakeProcesses* procs = &g_processes[device - g_devices];
  if (procs->rc != NVML_SUCCESS) return procs->rc;
  if (*count < procs->count) {
    *count = procs->count;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (procs->count > 0 && infos == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned k = 0; k < procs->count; ++k) {
    infos[k].pid = procs->pid[k];
    infos[k].usedGpuMemory =
        procs->mib[k] == NVML_VALUE_NOT_AVAILABLE ? NVML_VALUE_NOT_AVAILABLE : procs->mib[k] << 20;
    infos[k].gpuInstanceId = 0xFFFFFFFFu; /* not a MIG instance */
    infos[k].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = procs->count;
  return NVML_SUCCESS;
}

/* Events. Sets are allocated per call, as NVML's are, so that two readers
 * of one process each get the scripted XIDs once. */
FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *set = calloc(1, sizeof **set);
  return *set != NULL ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                  unsigned long long event_types,
                                                  nvmlEventSet_t set) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (!validDevice(device) || set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned index = (unsigned)(device - g_devices);
  if (g_register_rc[index] != NVML_SUCCESS) return g_register_rc[index];
  /* As NVML: a type the device cannot report fails the whole call. */
  if ((event_types & ~(unsigned long long)nvmlEventTypeXidCriticalError) != 0) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  set->types[index] |= event_types;
  return NVML_SUCCESS;
}

/* The next scripted XID `set` has not delivered on a GPU registered in it
 * for XIDs, marked delivered; NULL when none is left. */
static const struct fakeXid* nextXid(nvmlEventSet_t set) {
  for (unsigned k = 0; k < g_xid_count; ++k) {
    if (set->delivered[k]) continue;
    if ((set->types[g_xids[k].gpu] & nvmlEventTypeXidCriticalError) == 0) continue;
    set->delivered[k] = 1;
    return &g_xids[k];
  }
  return NULL;
}

/* Both waits: the scripted XIDs are pending from registration on, so
 * waiting never sleeps: an empty set answers NVML_ERROR_TIMEOUT at once,
 * whatever the timeout. Fills the whole _v2 struct; `data` NULL is refused
 * after the init check, as NVML orders them, and consumes no XID. */
static nvmlReturn_t waitXid(nvmlEventSet_t set, nvmlEventData_t* data) {
  if (g_init_refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == NULL || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const struct fakeXid* x = nextXid(set);
  if (x == NULL) return NVML_ERROR_TIMEOUT;
  data->device = &g_devices[x->gpu];
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = x->xid;
  data->gpuInstanceId = 0xFFFFFFFFu; /* not a MIG instance */
  data->computeInstanceId = 0xFFFFFFFFu;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_EVENT_WAIT_V2
FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                             unsigned int timeoutms) {
  (void)timeoutms;
  return waitXid(set, data);
}
#endif /* FAKE_NVML_NO_EVENT_WAIT_V2 */

/* The unversioned wait fills the struct of drivers before MIG, and only
 * that: callers must not rely on the fields _v2 added. The old struct is a
 * prefix of the new one (same leading members), so its bytes are copied
 * from a full answer and nothing past its end is written. */
FAKE_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, fakeEventDataV1* data,
                                          unsigned int timeoutms) {
  (void)timeoutms;
  nvmlEventData_t full;
  nvmlReturn_t rc = waitXid(set, data == NULL ? NULL : &full);
  if (rc == NVML_SUCCESS) memcpy(data, &full, sizeof *data);
  return rc;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  free(set);
  return NVML_SUCCESS;
}
#endif /* FAKE_NVML_NO_SAMPLING */
