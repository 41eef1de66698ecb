/* A fixture in the shape of nvml.h: the status type nvmlReturn_t, names
   that end in _t, functions renamed to their versioned symbols by
   #define, versioned structs whose version is a macro of sizeof and ##,
   plain long behind a pointer and in a union whose layout it does not
   change, a string constant, a bit range, a constant that names macros
   defined after it, a struct named like a function, and an array of an
   anonymous struct. */
#ifndef __nvml_nvml_h__
#define __nvml_nvml_h__

#ifdef __cplusplus
extern "C" {
#endif

#define DECLDIR

#define NVML_API_VERSION     13
#define NVML_API_VERSION_STR "13"

#ifndef NVML_NO_UNVERSIONED_FUNC_DEFS
    #define nvmlInit                 nvmlInit_v2
    #define nvmlDeviceGetCount       nvmlDeviceGetCount_v2
    #define nvmlEventSetWait         nvmlEventSetWait_v2
    #define nvmlOldInfo_t            nvmlNewInfo_t
#endif

#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml ## data ## _v ## ver ## _t) | \
                                                      (ver << 24U))

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef unsigned int nvmlAffinityScope_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef union nvmlValue_st {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
} nvmlValue_t;

typedef struct {
    unsigned int flags;
    struct {
        unsigned int present;
        unsigned int percentage;
    } utilization[8];
} nvmlDynamicInfo_t;

typedef struct { unsigned int id; } nvmlCounterGet_t;

#define nvmlEventReasonAll (nvmlEventReasonNone | nvmlEventReasonIdle)
#define nvmlEventReasonIdle 0x0000000000000001LL
#define nvmlEventReasonNone 0x0000000000000000LL
#define nvmlEventReasonOldIdle nvmlEventReasonIdle

#define NVML_CAP_MIGRATION 0:0

nvmlReturn_t DECLDIR nvmlInit_v2(void);
nvmlReturn_t DECLDIR nvmlShutdown(void);
const char *DECLDIR nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t DECLDIR nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet, nvmlAffinityScope_t scope);
nvmlReturn_t DECLDIR nvmlCounterGet(nvmlCounterGet_t *counter);

#ifdef NVML_NO_UNVERSIONED_FUNC_DEFS
nvmlReturn_t DECLDIR nvmlInit(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
