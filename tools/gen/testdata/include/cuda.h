/*
 * A small header in the shape of CUDA's cuda.h, for the generator's tests.
 * It uses every construct the real header does. It is also compiled by the
 * layout test, so it must stay valid C.
 */

#ifndef __fixture_cuda_h__
#define __fixture_cuda_h__

#include <stdlib.h>
#ifdef _MSC_VER
typedef unsigned __int32 cuuint32_t;
typedef unsigned __int64 cuuint64_t;
#else
#include <stdint.h>
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
#endif

#if defined(__CUDA_API_VERSION_INTERNAL) || defined(__DOXYGEN_ONLY__) || defined(CUDA_ENABLE_DEPRECATED)
#define __CUDA_DEPRECATED
#elif defined(_MSC_VER)
#define __CUDA_DEPRECATED __declspec(deprecated)
#elif defined(__GNUC__)
#define __CUDA_DEPRECATED __attribute__((deprecated))
#else
#define __CUDA_DEPRECATED
#endif

#if defined(__CUDA_API_VERSION_INTERNAL) || defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define __CUDA_API_PER_THREAD_DEFAULT_STREAM
    #define __CUDA_API_PTDS(api) api ## _ptds
    #define __CUDA_API_PTSZ(api) api ## _ptsz
#else
    #define __CUDA_API_PTDS(api) api
    #define __CUDA_API_PTSZ(api) api
#endif

#define cuMemAlloc                          cuMemAlloc_v2
#define cuMemcpyHtoD                        __CUDA_API_PTDS(cuMemcpyHtoD_v2)
#define cuMemPrefetchAsync                  __CUDA_API_PTSZ(cuMemPrefetchAsync_v2)
#define cuIpcOpenMemHandle                  cuIpcOpenMemHandle_v2
#define cuGraphInstantiate                  cuGraphInstantiateWithFlags

#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define cuStreamQuery                   __CUDA_API_PTSZ(cuStreamQuery)
#endif

/** Version of this header: 13.0. */
#define CUDA_VERSION 13000

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long CUdeviceptr_v2;
#else
typedef unsigned int CUdeviceptr_v2;
#endif
typedef CUdeviceptr_v2 CUdeviceptr;                 /**< device pointer */

typedef int CUdevice_v1;                            /**< device */
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;                 /**< a handle */
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef cuuint64_t CUgraphConditionalHandle;

#ifndef CU_UUID_HAS_BEEN_DEFINED
#define CU_UUID_HAS_BEEN_DEFINED
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;
#endif

#define CU_IPC_HANDLE_SIZE 64

typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle_v1;
typedef CUipcMemHandle_v1 CUipcMemHandle;

#define CU_STREAM_LEGACY     ((CUstream)0x1)

/**
 * Error codes.
 */
typedef enum cudaError_enum {
    CUDA_SUCCESS                              = 0,
    CUDA_ERROR_INVALID_VALUE                  = 1,
    CUDA_ERROR_OUT_OF_MEMORY,                 /* implicit: 2 */
    CUDA_ERROR_NOT_READY                      = 600,
    CUDA_ERROR_ALIAS                          = CUDA_ERROR_NOT_READY, // a duplicate value
    CUDA_ERROR_UNKNOWN                        = 999
} CUresult;

typedef enum CUflags_enum {
    CU_FLAG_NONE      = 0x0,
    CU_FLAG_A         = 1 << 0,
    CU_FLAG_B         = 1u<<1,
    CU_FLAG_AB        = CU_FLAG_A | CU_FLAG_B,
    CU_FLAG_NEGATIVE  = -1,
    CU_FLAG_NEXT,                           /* implicit after a negative value: 0 */
    CU_FLAG_EXPR      = (CU_FLAG_AB + 2) * 3 - ~0,
} CUflags;

typedef enum CUbig_enum {
    CU_BIG_LOW = 0,
    CU_BIG_HIGH = 0x80000000
} CUbig;

#define CU_TARGET_BASE 0x10000
typedef enum CUtarget_enum {
    CU_TARGET_10 = 10,
    CU_TARGET_10A = CU_TARGET_BASE + CU_TARGET_10
} CUtarget;

typedef enum {
    CU_ANON_ENUM_ONE = 1,
} CUanon_flags;

typedef CUflags CUflagsAlias;

enum CUtagonly_enum { CU_TAGONLY_A = 1 };
enum { CU_LONE_CONST = 3 };

struct CUtagonly_st {
    enum CUtagonly_enum mode;
    unsigned int count;
};

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1
} CUmemLocationType;

/** A struct of 8 bytes, passed by value. */
typedef struct CUmemLocation_st {
    CUmemLocationType type; /**< kind */
    int id;                 /**< id */
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

/**
 * A union with a tagged nested struct that holds an anonymous union,
 * and an anonymous nested struct.
 */
typedef union CUparams_union {
    int operation;
    struct CUparamsWait_st {
        int operation;
        CUdeviceptr address;
        union {
            cuuint32_t value;
            cuuint64_t value64;
        };
        unsigned int flags;
    } waitValue;
    struct {
        unsigned int x;
        unsigned int y;
    } dim;
    cuuint64_t pad[4];
} CUparams_v1;
typedef CUparams_v1 CUparams;

typedef struct CUDA_NESTED_st {
    int kind;
    struct CUtagonly_st tagged;
    char pad[8 - sizeof(int)];          /* sizeof in an array size */
    union {
        struct {
            void *ptr;
            size_t size;
        } linear;
        struct {
            int reserved[32];
        } reserved;
    } res;
    const char *name;
    float matrix[2][3];                 /* 2-D array */
    unsigned short us;
    unsigned char uc;
    short s;
    signed char sc;
    double d;
    long long ll;
    unsigned long long ull;
    struct CUDA_NESTED_st *next;
    void **pp;
} CUDA_NESTED_v1;
typedef CUDA_NESTED_v1 CUDA_NESTED;

typedef struct CUDA_OLD_st {
    unsigned int a;
} CUDA_OLD_v1;
typedef struct CUDA_OLD_v2_st {
    unsigned int a;
    unsigned int b;
} CUDA_OLD_v2;
typedef CUDA_OLD_v1 CUDA_OLD;

/** Over-aligned, as CUtensorMap. */
typedef struct CUtensorMap_st {
#if defined(__cplusplus) && (__cplusplus >= 201103L)
    alignas(128)
#elif __STDC_VERSION__ >= 201112L
    _Alignas(128)
#endif
    cuuint64_t opaque[16];
} CUtensorMap;

#define RESOURCE_ABI_VERSION 1
#define _CONCAT_INNER(x, y) x ## y
#define _CONCAT_OUTER(x, y) _CONCAT_INNER(x, y)

typedef struct CUdevResource_st {
    int type;
    unsigned char _internal_padding[12];
    union {
        CUuuid uuid;
        unsigned char _oversize[24];
    };
} _CONCAT_OUTER(CUdevResource_v, RESOURCE_ABI_VERSION);
typedef _CONCAT_OUTER(CUdevResource_v, RESOURCE_ABI_VERSION) CUdevResource;

#undef _CONCAT_INNER
#undef _CONCAT_OUTER

#ifdef _WIN32
#define CUDA_CB __stdcall
#else
#define CUDA_CB
#endif

typedef void (CUDA_CB *CUhostFn)(void *userData);
typedef size_t (CUDA_CB *CUoccupancyB2DSize)(int blockSize);

#define CU_LAUNCH_PARAM_END_AS_INT     0x00
#define CU_LAUNCH_PARAM_END            ((void*)CU_LAUNCH_PARAM_END_AS_INT)
#define CU_DEVICE_CPU               ((CUdevice)-1)
#define CU_PARAM_TR_DEFAULT -1
#define CU_FLAGS_ALIAS CU_FLAG_AB
#define CU_SHIFTED (1 << 4)
#define CU_MEMHOSTREGISTER_PORTABLE 0x01u

#ifdef _WIN32
#define CUDAAPI __stdcall
#else
#define CUDAAPI
#endif

// Functions.

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr);
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxSynchronize(void);
CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr);
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice,
                              const void *srcHost,   /* multi-line */
                              size_t ByteCount);
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream);
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult CUDAAPI cuStreamQuery(CUstream hStream);
CUresult CUDAAPI cuLaunchKernel(CUfunction f,
                                unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult CUDAAPI cuTensorMapEncode(CUtensorMap *tensorMap, const CUparams *params, CUDA_NESTED *nested);
CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements, unsigned numChannels, CUdevice dev);
__CUDA_DEPRECATED CUresult CUDAAPI cuParamSetf(CUfunction hfunc, int offset, float value);
__CUDA_DEPRECATED CUresult CUDAAPI cuParamSetd(CUfunction hfunc, double value, float scale);
CUresult CUDAAPI cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev);
CUresult CUDAAPI cuFuncSetFlags(CUfunction hfunc, CUflags flags, CUflagsAlias more, int type);

#if defined(__CUDA_API_VERSION_INTERNAL)
    #undef cuMemAlloc
    #undef cuMemcpyHtoD

    CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, unsigned int bytesize);
    CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, unsigned int ByteCount);

    typedef unsigned int CUdeviceptr_v1;
#elif defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
static inline CUresult cuInlineHelper(void) {
    return CUDA_SUCCESS;
}
#endif

/** After the internal section. */
CUresult CUDAAPI cuCheckpointProcessGetState(int pid, int *state);

#ifdef __cplusplus
}
#endif

#undef __CUDA_DEPRECATED

#endif /* __fixture_cuda_h__ */
