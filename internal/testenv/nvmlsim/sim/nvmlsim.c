/*
 * nvmlsim.c: a small CPU stand-in for NVML (libnvidia-ml.so.1, nvml.dll),
 * the fixture package nvml's tests run on when there is no GPU. It is a
 * test fixture, not a product: it implements the calls package nvml's
 * Go-shaped layer makes, with NVML's return codes, and nothing else.
 *
 * Build (one translation unit; needs no NVML header or library):
 *
 *     cc -O2 -shared -fPIC -pthread -Wall -Wextra -o libnvmlsim.so internal/testenv/nvmlsim/sim/nvmlsim.c
 *     x86_64-w64-mingw32-gcc -O2 -shared -pthread -static -o nvml.dll internal/testenv/nvmlsim/sim/nvmlsim.c
 *
 * What it models
 *   - Two H200-like devices. Their UUIDs and PCI bus ids are those the
 *     driver simulator (sim.c: cuDeviceGetUuid_v2, cuDeviceGetPCIBusId)
 *     reports for the same ordinals, so that the two can be matched as on
 *     a real machine: device i is GPU-5e1a7ed0-4820-4c0d-9a3b-1122334455ii
 *     (ii its index in two hexadecimal digits) at 0000:(0x19 + 0x10 i):00.0.
 *   - nvmlInit_v2/nvmlInitWithFlags count, nvmlShutdown counts down; every
 *     other call but nvmlErrorString returns NVML_ERROR_UNINITIALIZED while
 *     the count is 0, as NVML does.
 *   - Versioned structs (nvmlMemory_v2_t, nvmlTemperature_t) must carry
 *     their version: another gives NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
 *   - Device 1 is in MIG mode with two MIG devices (GPU instances 1 and 2,
 *     compute instance 0); device 0 is not (NVML_ERROR_NOT_SUPPORTED for
 *     the MIG device calls, as on a GPU without MIG mode).
 *   - No fan (NVML_ERROR_NOT_SUPPORTED, as a passively cooled H200).
 *   - Four NVLink links per device, 0 and 1 active; link 4 and above
 *     NVML_ERROR_INVALID_ARGUMENT. The two devices' common ancestor is
 *     NVML_TOPOLOGY_NODE.
 *   - Event sets: a set holds the events posted (nvmlsim_post_event) to
 *     the devices registered on it, for the types registered, in order;
 *     nvmlEventSetWait_v2 waits on a condition variable with its timeout.
 *
 * Test hooks, exported next to the NVML functions:
 *   int nvmlsim_post_event(unsigned index, unsigned long long type,
 *       unsigned long long data): posts an event of the device of that
 *       index; returns the number of sets that took it.
 *   int nvmlsim_set_processes(unsigned index, unsigned n): the device shows
 *       n compute processes (pid 1000+k, (k+1) MiB each); returns 0.
 *   int nvmlsim_fail_next(const char *name, int skip, int count, int ret):
 *       after skip calls that pass, the next count calls of the function
 *       named (e.g. "nvmlEventSetWait_v2") return ret; count 0 clears it. Returns 0, or -1 when no slot is
 *       free.
 *   long long nvmlsim_stat(const char *name): "init" (the nvmlInit count),
 *       "sets" (live event sets), "waiting" (nvmlEventSetWait_v2 calls in
 *       progress), "inits" (nvmlInit calls ever), "shutdowns"
 *       (nvmlShutdown calls ever), "queued" (events posted to live sets
 *       and not yet taken by a wait); -1 for another name.
 *
 * Locking: one mutex (mu) guards all state; one condition variable (cv) is
 * broadcast when an event is posted or a set freed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

/* NVML's types and values that this file uses, with nvml.h's numbers. */
typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};
#define STRUCT_VERSION(size, ver) ((unsigned int)((size) | ((ver) << 24U)))

typedef struct nvmlsim_device *nvmlDevice_t;
typedef struct nvmlsim_set *nvmlEventSet_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int version; int sensorType; int temperature; } nvmlTemperature_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define NDEV 2
#define NMIG 2
#define MAX_PROCS 256
#define MAX_SETS 64
#define SET_QUEUE 64
#define MIB (1024ull * 1024ull)
#define VALUE_NOT_AVAILABLE 0xFFFFFFFFu

/* The event types the devices support: ECC, Xid, clock, pstate. */
#define SUPPORTED_EVENTS (0x1ull | 0x2ull | 0x4ull | 0x8ull | 0x10ull)

struct nvmlsim_device {
    int index;       /* of the whole GPU */
    int mig;         /* -1 for a whole GPU, else the MIG device's slot */
    int gi, ci;      /* MIG instance ids */
    unsigned nprocs; /* compute processes shown */
};

struct nvmlsim_set {
    int live;
    unsigned long long types[NDEV]; /* registered types per device */
    nvmlEventData_t queue[SET_QUEUE];
    int head, len;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int init_count;
static long long inits, shutdowns, waiting;
static struct nvmlsim_device devs[NDEV] = {{0, -1, 0, 0, 2}, {1, -1, 0, 0, 0}};
static struct nvmlsim_device migs[NDEV][NMIG] = {
    {{0, 0, 1, 0, 0}, {0, 1, 2, 0, 0}},
    {{1, 0, 1, 0, 0}, {1, 1, 2, 0, 0}},
};
static struct nvmlsim_set sets[MAX_SETS];
static unsigned long long energy[NDEV];

static const int mig_mode[NDEV] = {0, 1};

/* Failures on demand (nvmlsim_fail_next). Guarded by mu. */
#define MAX_FAILS 16
static struct {
    char name[64];
    int skip, count, ret;
} fails[MAX_FAILS];

/* failing is what the call named must fail with, or NVML_SUCCESS. Called
 * with mu held. */
static nvmlReturn_t failing(const char *name) {
    for (int i = 0; i < MAX_FAILS; i++) {
        if (fails[i].count > 0 && strcmp(fails[i].name, name) == 0) {
            if (fails[i].skip > 0) {
                fails[i].skip--;
                return NVML_SUCCESS;
            }
            fails[i].count--;
            return fails[i].ret;
        }
    }
    return NVML_SUCCESS;
}

/* ready fails while NVML is not initialized. Called with mu held. */
static int ready(void) { return init_count > 0; }

static int valid_device(nvmlDevice_t d) {
    for (int i = 0; i < NDEV; i++) {
        if (d == &devs[i])
            return 1;
        for (int m = 0; m < NMIG; m++)
            if (d == &migs[i][m] && mig_mode[i])
                return 1;
    }
    return 0;
}

static int valid_set(nvmlEventSet_t s) {
    return s >= &sets[0] && s < &sets[MAX_SETS] && s->live;
}

/* Each call begins with one of these: lock, check init and the device. */
#define BEGIN() \
    pthread_mutex_lock(&mu); \
    if (!ready()) { pthread_mutex_unlock(&mu); return NVML_ERROR_UNINITIALIZED; } \
    { nvmlReturn_t fail_ = failing(__func__); if (fail_ != NVML_SUCCESS) { pthread_mutex_unlock(&mu); return fail_; } }
#define BEGIN_DEV(d) \
    BEGIN(); \
    if (!valid_device(d)) { pthread_mutex_unlock(&mu); return NVML_ERROR_INVALID_ARGUMENT; }
#define END(r) do { pthread_mutex_unlock(&mu); return (r); } while (0)

/* put copies s into buf of length n, or fails as NVML does. */
static nvmlReturn_t put(char *buf, unsigned n, const char *s) {
    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > n)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

static void uuid_of(nvmlDevice_t d, char *out, size_t n) {
    if (d->mig < 0)
        snprintf(out, n, "GPU-5e1a7ed0-4820-4c0d-9a3b-1122334455%02x", d->index);
    else
        snprintf(out, n, "MIG-5e1a7ed0-4820-4c0d-9a3b-%08x%04x", d->index, d->mig);
}

static unsigned bus_of(int index) { return 0x19u + 0x10u * (unsigned)index; }

/* ==== initialization ==== */

EXPORT nvmlReturn_t nvmlInit_v2(void) {
    pthread_mutex_lock(&mu);
    nvmlReturn_t fail = failing(__func__);
    if (fail != NVML_SUCCESS)
        END(fail);
    init_count++;
    inits++;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return nvmlInit_v2();
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
    BEGIN();
    init_count--;
    shutdowns++;
    END(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    }
    return "Unknown Error";
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    BEGIN();
    END(put(version, length, "580.0.sim"));
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    BEGIN();
    END(put(version, length, "13.580.0.sim"));
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    BEGIN();
    if (v == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *v = 13000;
    END(NVML_SUCCESS);
}

/* ==== finding devices ==== */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
    BEGIN();
    if (n == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *n = NDEV;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *d) {
    BEGIN();
    if (d == NULL || index >= NDEV)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *d = &devs[index];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
    BEGIN();
    if (uuid == NULL || d == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    char u[96];
    for (int i = 0; i < NDEV; i++) {
        uuid_of(&devs[i], u, sizeof u);
        if (strcmp(u, uuid) == 0) {
            *d = &devs[i];
            END(NVML_SUCCESS);
        }
        for (int m = 0; m < NMIG && mig_mode[i]; m++) {
            uuid_of(&migs[i][m], u, sizeof u);
            if (strcmp(u, uuid) == 0) {
                *d = &migs[i][m];
                END(NVML_SUCCESS);
            }
        }
    }
    END(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *busId, nvmlDevice_t *d) {
    BEGIN();
    if (busId == NULL || d == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    unsigned domain, bus, dev, fn;
    char extra;
    if (sscanf(busId, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &extra) != 4)
        END(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < NDEV; i++) {
        if (domain == 0 && bus == bus_of(i) && dev == 0 && fn == 0) {
            *d = &devs[i];
            END(NVML_SUCCESS);
        }
    }
    END(NVML_ERROR_NOT_FOUND);
}

/* ==== identity ==== */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    BEGIN_DEV(d);
    END(put(name, length, d->mig < 0 ? "NVIDIA H200 (simulated)" : "NVIDIA H200 MIG 3g.71gb (simulated)"));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
    BEGIN_DEV(d);
    char u[96];
    uuid_of(d, u, sizeof u);
    END(put(uuid, length, u));
}

EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int length) {
    BEGIN_DEV(d);
    char s[32];
    snprintf(s, sizeof s, "165402400%04d", d->index);
    END(put(serial, length, s));
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    BEGIN_DEV(d);
    if (pci == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    memset(pci, 0, sizeof *pci);
    pci->domain = 0;
    pci->bus = bus_of(d->index);
    pci->device = 0;
    pci->pciDeviceId = 0x233510DEu;
    pci->pciSubSystemId = 0x18BF10DEu;
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
    BEGIN_DEV(d);
    if (index == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *index = (unsigned)d->index;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor) {
    BEGIN_DEV(d);
    if (minor == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *minor = (unsigned)d->index;
    END(NVML_SUCCESS);
}

/* ==== state ==== */

#define TOTAL_MEM (144ull * 1024 * MIB)
#define RESERVED_MEM (512ull * MIB)
static unsigned long long used_mem(nvmlDevice_t d) {
    unsigned long long used = 0;
    for (unsigned k = 0; k < devs[d->index].nprocs; k++)
        used += (k + 1) * MIB;
    return used;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    BEGIN_DEV(d);
    if (m == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    m->total = TOTAL_MEM;
    m->used = used_mem(d) + RESERVED_MEM;
    m->free = m->total - m->used;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    BEGIN_DEV(d);
    if (m == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (m->version != STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2))
        END(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m->total = TOTAL_MEM;
    m->reserved = RESERVED_MEM;
    m->used = used_mem(d);
    m->free = m->total - m->reserved - m->used;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    BEGIN_DEV(d);
    if (u == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    u->gpu = 0;
    u->memory = 0;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t d, nvmlTemperature_t *t) {
    BEGIN_DEV(d);
    if (t == NULL || t->sensorType != 0)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (t->version != STRUCT_VERSION(sizeof(nvmlTemperature_t), 1))
        END(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    t->temperature = 31 + d->index;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp) {
    BEGIN_DEV(d);
    if (temp == NULL || sensor != 0)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *temp = 31u + (unsigned)d->index;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, int kind, unsigned int *temp) {
    BEGIN_DEV(d);
    /* shutdown, slowdown, mem max, gpu max */
    static const unsigned values[] = {95, 92, 95, 88};
    if (temp == NULL || kind < 0)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (kind >= 4)
        END(NVML_ERROR_NOT_SUPPORTED);
    *temp = values[kind];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    BEGIN_DEV(d);
    if (mw == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *mw = 75000u + 1000u * (unsigned)d->index;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
    BEGIN_DEV(d);
    if (mw == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *mw = 700000u;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) {
    return nvmlDeviceGetEnforcedPowerLimit(d, mw);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    BEGIN_DEV(d);
    if (mj == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    energy[d->index] += 75; /* it only grows */
    *mj = 1000000ull + energy[d->index];
    END(NVML_SUCCESS);
}

/* graphics, SM, memory, video */
static const unsigned clocks[] = {345, 345, 3201, 765};
static const unsigned max_clocks[] = {1980, 1980, 3201, 1965};

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    BEGIN_DEV(d);
    if (mhz == NULL || type < 0 || type >= 4)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *mhz = clocks[type];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    BEGIN_DEV(d);
    if (mhz == NULL || type < 0 || type >= 4)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *mhz = max_clocks[type];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *speed) {
    BEGIN_DEV(d);
    (void)speed;
    END(NVML_ERROR_NOT_SUPPORTED);
}

EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *p) {
    BEGIN_DEV(d);
    if (p == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *p = 0;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending) {
    BEGIN_DEV(d);
    if (current == NULL || pending == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *current = *pending = 1;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n) {
    BEGIN_DEV(d);
    if (n == NULL || type < 0 || type > 1 || counter < 0 || counter > 1)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *n = type == 0 ? 1 : 0; /* one corrected error, no uncorrected one */
    END(NVML_SUCCESS);
}

static nvmlReturn_t list_procs(nvmlDevice_t d, unsigned n, unsigned *count, nvmlProcessInfo_t *infos) {
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && infos == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned k = 0; k < n; k++) {
        infos[k].pid = 1000 + k;
        infos[k].usedGpuMemory = (k + 1) * MIB;
        infos[k].gpuInstanceId = VALUE_NOT_AVAILABLE;
        infos[k].computeInstanceId = VALUE_NOT_AVAILABLE;
    }
    (void)d;
    *count = n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos) {
    BEGIN_DEV(d);
    END(list_procs(d, d->mig < 0 ? d->nprocs : 0, count, infos));
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos) {
    BEGIN_DEV(d);
    END(list_procs(d, 0, count, infos));
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
    BEGIN_DEV(d);
    if (reasons == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *reasons = 0x1ull; /* GPU idle */
    END(NVML_SUCCESS);
}

/* ==== MIG ==== */

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    BEGIN_DEV(d);
    if (current == NULL || pending == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (d->mig >= 0)
        END(NVML_ERROR_NOT_SUPPORTED);
    *current = *pending = (unsigned)mig_mode[d->index];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
    BEGIN_DEV(d);
    if (count == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (d->mig >= 0 || !mig_mode[d->index])
        END(NVML_ERROR_NOT_SUPPORTED);
    *count = 7; /* an H200's most; slots 2-6 are empty */
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig) {
    BEGIN_DEV(d);
    if (mig == NULL || d->mig >= 0 || index >= 7)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (!mig_mode[d->index])
        END(NVML_ERROR_NOT_SUPPORTED);
    if (index >= NMIG)
        END(NVML_ERROR_NOT_FOUND);
    *mig = &migs[d->index][index];
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is) {
    BEGIN_DEV(d);
    if (is == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *is = d->mig >= 0;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
    BEGIN_DEV(d);
    if (id == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (d->mig < 0)
        END(NVML_ERROR_NOT_SUPPORTED);
    *id = (unsigned)d->gi;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) {
    BEGIN_DEV(d);
    if (id == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (d->mig < 0)
        END(NVML_ERROR_NOT_SUPPORTED);
    *id = (unsigned)d->ci;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *d) {
    BEGIN_DEV(mig);
    if (d == NULL || mig->mig < 0)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *d = &devs[mig->index];
    END(NVML_SUCCESS);
}

/* ==== NVLink and topology ==== */

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active) {
    BEGIN_DEV(d);
    if (active == NULL || link >= 4)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *active = link < 2;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level) {
    BEGIN_DEV(a);
    if (!valid_device(b) || level == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *level = a->index == b->index ? 0 /* INTERNAL */ : 40 /* NODE */;
    END(NVML_SUCCESS);
}

/* ==== events ==== */

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
    BEGIN_DEV(d);
    if (types == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    *types = SUPPORTED_EVENTS;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    BEGIN();
    if (set == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < MAX_SETS; i++) {
        if (!sets[i].live) {
            memset(&sets[i], 0, sizeof sets[i]);
            sets[i].live = 1;
            *set = &sets[i];
            END(NVML_SUCCESS);
        }
    }
    END(NVML_ERROR_UNKNOWN);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
    BEGIN_DEV(d);
    if (!valid_set(set) || d->mig >= 0)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (types & ~SUPPORTED_EVENTS)
        END(NVML_ERROR_NOT_SUPPORTED);
    set->types[d->index] |= types;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    BEGIN();
    if (!valid_set(set) || data == NULL)
        END(NVML_ERROR_INVALID_ARGUMENT);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeoutms / 1000;
    until.tv_nsec += (long)(timeoutms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    waiting++;
    while (set->live && set->len == 0) {
        if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
            break;
    }
    waiting--;
    if (!set->live)
        END(NVML_ERROR_INVALID_ARGUMENT);
    if (set->len == 0)
        END(NVML_ERROR_TIMEOUT);
    *data = set->queue[set->head];
    set->head = (set->head + 1) % SET_QUEUE;
    set->len--;
    END(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    BEGIN();
    if (!valid_set(set))
        END(NVML_ERROR_INVALID_ARGUMENT);
    set->live = 0;
    pthread_cond_broadcast(&cv);
    END(NVML_SUCCESS);
}

/* ==== test hooks ==== */

EXPORT int nvmlsim_post_event(unsigned index, unsigned long long type, unsigned long long data) {
    if (index >= NDEV)
        return -1;
    pthread_mutex_lock(&mu);
    int n = 0;
    for (int i = 0; i < MAX_SETS; i++) {
        struct nvmlsim_set *s = &sets[i];
        if (!s->live || !(s->types[index] & type) || s->len == SET_QUEUE)
            continue;
        nvmlEventData_t *e = &s->queue[(s->head + s->len) % SET_QUEUE];
        e->device = &devs[index];
        e->eventType = type;
        e->eventData = data;
        e->gpuInstanceId = VALUE_NOT_AVAILABLE;
        e->computeInstanceId = VALUE_NOT_AVAILABLE;
        s->len++;
        n++;
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return n;
}

EXPORT int nvmlsim_set_processes(unsigned index, unsigned n) {
    if (index >= NDEV || n > MAX_PROCS)
        return -1;
    pthread_mutex_lock(&mu);
    devs[index].nprocs = n;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int nvmlsim_fail_next(const char *name, int skip, int count, int ret) {
    pthread_mutex_lock(&mu);
    int slot = -1;
    for (int i = 0; i < MAX_FAILS; i++) {
        if (fails[i].count > 0 && strcmp(fails[i].name, name) == 0)
            slot = i;
        if (slot < 0 && fails[i].count == 0)
            slot = i;
    }
    if (slot >= 0) {
        strncpy(fails[slot].name, name, sizeof fails[slot].name - 1);
        fails[slot].skip = skip;
        fails[slot].count = count;
        fails[slot].ret = ret;
    }
    pthread_mutex_unlock(&mu);
    return slot < 0 ? -1 : 0;
}

EXPORT long long nvmlsim_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&mu);
    if (strcmp(name, "init") == 0)
        v = init_count;
    else if (strcmp(name, "inits") == 0)
        v = inits;
    else if (strcmp(name, "shutdowns") == 0)
        v = shutdowns;
    else if (strcmp(name, "waiting") == 0)
        v = waiting;
    else if (strcmp(name, "queued") == 0) {
        v = 0;
        for (int i = 0; i < MAX_SETS; i++)
            v += sets[i].live ? sets[i].len : 0;
    } else if (strcmp(name, "sets") == 0) {
        v = 0;
        for (int i = 0; i < MAX_SETS; i++)
            v += sets[i].live;
    }
    pthread_mutex_unlock(&mu);
    return v;
}
