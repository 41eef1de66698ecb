/*
 * sim.c: a CPU simulator of the CUDA driver API, the fixture that purecuda's
 * test suite runs on when there is no GPU.
 *
 * Build (one translation unit; needs no CUDA header or library):
 *
 *     cc -O2 -shared -fPIC -pthread -Wall -Wextra -o libcudasim.so tests/sim/sim.c
 *
 * Self-test (see sim_selftest.c; the second line checks for data races):
 *
 *     cc -O2 -pthread -o /tmp/sim_selftest tests/sim/sim_selftest.c -ldl && /tmp/sim_selftest ./libcudasim.so
 *     cc -g -O1 -fsanitize=thread -shared -fPIC -pthread -o /tmp/libcudasim_tsan.so tests/sim/sim.c
 *     cc -g -O1 -fsanitize=thread -pthread -o /tmp/sim_selftest_tsan tests/sim/sim_selftest.c -ldl
 *     /tmp/sim_selftest_tsan /tmp/libcudasim_tsan.so
 *
 * What it models
 *   - One device, or up to four when PURECUDA_SIM_DEVICES (2, 3 or 4) is set when
 *     cuInit runs.
 *     Its attributes are an H200's where they matter to the tests.
 *   - Device memory is host memory: a CUdeviceptr is the address of a malloc'd
 *     block. Registered and pinned host memory has device pointer == host pointer.
 *   - Each stream has a worker thread that runs its work in order. Kernels are
 *     recognised by their PTX entry names and run as native C (see "Kernels").
 *     The legacy default stream synchronises with blocking streams as the real
 *     driver's does; the per-thread default stream is a blocking stream.
 *   - cuMemHostUnregister, cuMemFreeHost and cuMemFree are device-wide fences:
 *     they return once all work submitted before them is done, and meanwhile
 *     most other threads' calls that submit or allocate wait (see gate()).
 *   - Stream capture with the driver's rules for "potentially unsafe" calls,
 *     capture modes, fork/join through events, and the error codes 900-908.
 *     Graphs hold the captured work and replay it in capture order.
 *   - Graph memory: cuMemAllocAsync and cuMemFreeAsync under capture become
 *     mem-alloc and mem-free nodes, with fixed addresses, the relaunch rule
 *     for allocations left live (CUDA_ERROR_INVALID_VALUE, or
 *     AUTO_FREE_ON_LAUNCH), the graph memory attributes and trim (see
 *     "Graph memory" below for what is modelled and what is not).
 *   - Device work that touches memory the device could not reach (not allocated,
 *     registered or pinned) is not run: the context gets the sticky error
 *     CUDA_ERROR_ILLEGAL_ADDRESS, as a GPU would report, and a line is printed.
 *     From then on every call in that context but cuCtxGetCurrent returns it
 *     (STICKY_POINT), cuDevicePrimaryCtxReset succeeds and the next
 *     cuDevicePrimaryCtxRetain fails with it, as measured on the H200.
 *   - Kernels may run across adjacent registrations; the driver's copies and
 *     memsets may not: a host range over two is CUDA_ERROR_INVALID_VALUE, as
 *     on the H200 (see one_host_range).
 *
 * Test hooks, exported next to the driver functions:
 *   int sim_fail_next(const char *base_name, int count, int code): the next
 *       `count` calls of that function return `code` and do nothing.
 *   int sim_fail_after(const char *base_name, int skip, int count, int code):
 *       the same after `skip` calls that work as usual.
 *   long long sim_stat(const char *name): a counter (see stat_names), -1 if unknown;
 *       "calls:NAME", the calls of the entry point NAME since the library was
 *       loaded, "thread_calls:NAME", those of the calling thread;
 *       "primary_retains:N", the retains of device N's primary context.
 *   void sim_reset_stats(void): zero the counters that only grow.
 *   const char *sim_call_name(int i): the entry point of the i-th call site
 *       (FAIL_POINT) called so far, NULL past the last; a name may have
 *       several sites.
 *   int sim_call_counts(long long *out, int n, int thread): the calls of
 *       each call site since the library was loaded, of every thread (or,
 *       with thread set, of the calling thread), into out[0..n); it returns
 *       how many sites have been called.
 *
 * Locking: one mutex (mu) guards all state; one condition variable (cv) is
 * broadcast whenever something finishes. Nothing slow runs with mu held:
 * workers drop it to run a task, waiters sleep on cv.
 *
 * Handles are pointers to the structs below. Handle structs are never
 * given back to malloc: a destroyed one is marked dead (magic = 0) and put
 * on its type's free list, and, as in the driver, its address serves again
 * for the next object of that type (streams, events, modules and their
 * functions, graphs, executable graphs). A stale handle is reported as
 * invalid until then, and never reads freed memory.
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
/* Windows, built by .ci/windows-wine with
 *     x86_64-w64-mingw32-gcc -O2 -shared -pthread -static -o nvcuda.dll sim.c
 * (winpthreads linked in): msvcrt has no aligned_alloc, and
 * its getenv reads a copy of the environment taken when the C runtime
 * started, so a variable set later (Go's os.Setenv before cuInit) is not
 * seen there; the process environment block is read instead. */
#include <malloc.h>
__declspec(dllimport) unsigned long __stdcall GetEnvironmentVariableA(const char *, char *, unsigned long);
#define aligned_alloc(align, size) _aligned_malloc((size), (align))
#define aligned_free(p) _aligned_free(p)
static char *sim_getenv(const char *name) {
    static _Thread_local char buf[256]; /* the values are short */
    unsigned long n = GetEnvironmentVariableA(name, buf, sizeof buf);
    return n > 0 && n < sizeof buf ? buf : NULL;
}
#define getenv sim_getenv
#else
#define aligned_free(p) free(p)
#endif

/* ==== BEGIN DRIVER TYPES ====
 * The driver's types and constants that this file uses, declared here with
 * the driver's numeric values so that no CUDA header is needed. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef int CUdevice_attribute;
typedef int CUpointer_attribute;
typedef int CUstreamCaptureMode;
typedef int CUstreamCaptureStatus;
typedef int CUjit_option;
typedef int CUdriverProcAddressQueryResult;
typedef int CUgraphExecUpdateResult;
typedef int CUgraphNodeType;
typedef void (*CUhostFn)(void *userData);
/* CUlaunchAttribute: an id, padding, and a 64-byte union of values (the
 * members the simulator reads). */
typedef struct CUlaunchAttribute_st {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int i;
        unsigned u;
        struct { unsigned x, y, z; } clusterDim;
        struct { void *event; int flags; int triggerAtBlockStart; } programmaticEvent;
    } value;
} CUlaunchAttribute;
typedef struct CUctxCreateParams_st CUctxCreateParams;
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
typedef struct CUgraphExecUpdateResultInfo_st {
    CUgraphExecUpdateResult result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
typedef struct CUuuid_st { char bytes[16]; } CUuuid;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUmemLocation_st { int type, id; } CUmemLocation;
typedef struct CUmemPoolProps_st {
    int allocType, handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;
typedef struct CUmemAccessDesc_st { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef struct CUmemPoolPtrExportData_st { unsigned char reserved[64]; } CUmemPoolPtrExportData;
typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
typedef struct CUgraphEdgeData_st {
    unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;

#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
    CUDA_ERROR_CAPTURED_EVENT = 907,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
    CUDA_ERROR_UNKNOWN = 999,
};
enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0, CU_EVENT_BLOCKING_SYNC = 1, CU_EVENT_DISABLE_TIMING = 2, CU_EVENT_INTERPROCESS = 4 };
enum { CU_EVENT_RECORD_EXTERNAL = 1, CU_EVENT_WAIT_EXTERNAL = 1 };
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1, CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum { CU_STREAM_CAPTURE_STATUS_NONE = 0, CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
       CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2 };
enum { CU_STREAM_WAIT_VALUE_GEQ = 0, CU_STREAM_WAIT_VALUE_EQ = 1, CU_STREAM_WAIT_VALUE_AND = 2,
       CU_STREAM_WAIT_VALUE_NOR = 3, CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30 };
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3, CU_MEMORYTYPE_UNIFIED = 4 };
enum { CU_POINTER_ATTRIBUTE_CONTEXT = 1, CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
       CU_POINTER_ATTRIBUTE_HOST_POINTER = 4, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
       CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12 };
enum { CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2 };
enum { CU_GET_PROC_ADDRESS_SUCCESS = 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
       CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2 };
enum { CU_GRAPH_NODE_TYPE_KERNEL = 0, CU_GRAPH_NODE_TYPE_MEMCPY = 1, CU_GRAPH_NODE_TYPE_MEMSET = 2,
       CU_GRAPH_NODE_TYPE_HOST = 3,
       CU_GRAPH_NODE_TYPE_GRAPH = 4, CU_GRAPH_NODE_TYPE_EMPTY = 5, CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10, CU_GRAPH_NODE_TYPE_MEM_FREE = 11, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12 };
enum { CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,
       CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3 };
enum { CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1 };
enum { CU_GRAPH_EXEC_UPDATE_SUCCESS = 0, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,
       CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3, CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 6 };
/* ==== END DRIVER TYPES ==== */

#define DRIVER_VERSION 13000
#define MAX_DEVICES 4
#ifdef __linux__
#define SIM_POSIX_FD 1 /* pools export to file descriptors: see "Pool IPC" */
#else
#define SIM_POSIX_FD 0
#endif
#define TOTAL_MEM ((size_t)140 << 30)

enum { MAGIC_CTX = 0x43545831, MAGIC_STREAM = 0x5354524d, MAGIC_EVENT = 0x45564e54, MAGIC_MODULE = 0x4d4f444c,
       MAGIC_FUNC = 0x46554e43, MAGIC_GRAPH = 0x47525048, MAGIC_EXEC = 0x45584543 };

/* ===================================================================
 * Shared state, small helpers
 * =================================================================== */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)
static void wait_cv(void) { pthread_cond_wait(&cv, &mu); }
static void wake_all(void) { pthread_cond_broadcast(&cv); }

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) { fputs("purecuda sim: out of memory\n", stderr); abort(); }
    return p;
}
static void *xrealloc(void *p, size_t size) {
    p = realloc(p, size ? size : 1);
    if (!p) { fputs("purecuda sim: out of memory\n", stderr); abort(); }
    return p;
}
/* Grow array `a` (of `cap` elements) so that it holds at least `need`. */
#define GROW(a, cap, need) do { if ((need) > (cap)) { (cap) = (need) < 8 ? 8 : 2 * (need); \
    (a) = xrealloc((a), (size_t)(cap) * sizeof *(a)); } } while (0)

/* Free lists of handle structs, one per type: the last freed is the first
 * reused, as an allocator does. mu held. */
struct freelist { void **v; int n, cap; };
static struct freelist free_streams, free_events, free_modules, free_graphs, free_execs;
static void *handle_alloc(struct freelist *f, size_t size) {
    if (!f->n) return xcalloc(1, size);
    void *p = f->v[--f->n];
    memset(p, 0, size);
    return p;
}
static void handle_free(struct freelist *f, void *p) {
    GROW(f->v, f->cap, f->n + 1);
    f->v[f->n++] = p;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static void sleep_until(uint64_t deadline) {
    struct timespec t = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {}
}
static void nap(void) { sleep_until(now_ns() + 20000); }

static int initialised; /* read with __atomic_load_n: some calls check it without mu */
static int ndevices;

/* Counters for sim_stat. Updated with mu held. */
static struct {
    long long registered_ranges, registered_bytes, live_streams, live_events, live_allocations,
        live_host_allocations, live_graphs, live_graph_execs, live_modules, active_captures, live_graph_allocations;
    /* cumulative, zeroed by sim_reset_stats */
    long long captures_invalidated, unregister_calls, register_calls, fences, kernel_launches,
        graph_launches, illegal_addresses, event_queries, fenced_calls, ctx_synchronize_calls, syncs_waiting,
        event_creates, pageable_copies, event_records, pool_trims, graph_mem_trims;
    long long attach_global, attach_host, attach_single; /* cuStreamAttachMemAsync calls done, by flag */
    long long live_link_states; /* cuLinkCreate's states not destroyed */
    long long last_trimmed_pool; /* the handle given to the last cuMemPoolTrimTo that worked */
} st;

/* ===================================================================
 * Fault injection: sim_fail_next arms a function's next calls to fail.
 * =================================================================== */

static struct fault { char name[64]; int skip, left; CUresult code; } faults[32]; /* skip calls pass first */
static int faults_armed; /* entries with left > 0; read without mu */

static void recount_faults(void) {
    int n = 0;
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) n += faults[i].left > 0;
    __atomic_store_n(&faults_armed, n, __ATOMIC_RELEASE);
}

static int take_fault(const char *name, CUresult *code) {
    int hit = 0;
    LOCK();
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (faults[i].left > 0 && strcmp(faults[i].name, name) == 0) {
            if (faults[i].skip > 0) { faults[i].skip--; break; }
            faults[i].left--;
            *code = faults[i].code;
            hit = 1;
            break;
        }
    recount_faults();
    UNLOCK();
    return hit;
}

/* Calls of each entry point, for sim_stat("calls:NAME") (every thread) and
 * sim_stat("thread_calls:NAME") (the thread that asks), and by call site
 * for sim_call_name and sim_call_counts: each FAIL_POINT is a call site,
 * numbered at its first call. Counted without mu, always. */
enum { max_call_sites = 512 };
static struct call_site { const char *name; int idx; } *call_sites[max_call_sites];
static int ncall_sites;
static long long call_counts[max_call_sites];
static _Thread_local long long thread_call_counts[max_call_sites];

static void count_entry(struct call_site *c) {
    int i = __atomic_load_n(&c->idx, __ATOMIC_ACQUIRE);
    if (i == 0) {
        static int lock;
        while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {}
        i = c->idx;
        if (i == 0 && ncall_sites < max_call_sites) {
            call_sites[ncall_sites] = c;
            i = ncall_sites + 1; /* idx is 1-based: 0 means not numbered yet */
            __atomic_store_n(&ncall_sites, i, __ATOMIC_RELEASE);
            __atomic_store_n(&c->idx, i, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
        if (i == 0) return;
    }
    __atomic_add_fetch(&call_counts[i - 1], 1, __ATOMIC_RELAXED);
    thread_call_counts[i - 1]++;
}

/* The count of calls to name: of every thread, or of the calling thread's. */
static long long calls_of(const char *name, int thread) {
    long long v = 0;
    int n = __atomic_load_n(&ncall_sites, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        struct call_site *c = __atomic_load_n(&call_sites[i], __ATOMIC_ACQUIRE);
        if (c && strcmp(c->name, name) == 0)
            v += thread ? thread_call_counts[i] : __atomic_load_n(&call_counts[i], __ATOMIC_RELAXED);
    }
    return v;
}

/* First statement of every driver entry point (called without mu held). */
#define FAIL_POINT(name) do { CUresult fc_; static struct call_site cs_ = { name, 0 }; count_entry(&cs_); \
    if (__atomic_load_n(&faults_armed, __ATOMIC_ACQUIRE) && take_fault(name, &fc_)) return fc_; } while (0)

/* Second statement of the entry points that work in the calling thread's
 * current context: once device work of that context has faulted, they all
 * return the fault's error, as on the H200 (DESIGN.md, driver facts); only
 * cuCtxGetCurrent and the calls about devices, contexts as handles and the
 * library itself still answer. (Calls given a stream or an event of a
 * faulted context check its context on their own.) */
#define STICKY_POINT() do { if (ts.depth) { \
    CUresult sk_ = __atomic_load_n(&ts.stack[ts.depth - 1]->sticky, __ATOMIC_ACQUIRE); \
    if (sk_) return sk_; } } while (0)

/* ===================================================================
 * Threads: each OS thread has a context stack, a capture mode and its
 * per-thread default streams.
 * =================================================================== */

static _Thread_local struct {
    int id;
    CUcontext stack[16];
    int depth;
    int mode; /* cuThreadExchangeStreamCaptureMode; 0 is GLOBAL, the default */
    struct { CUcontext ctx; CUstream s; } pts[MAX_DEVICES * 4];
    int npts;
} ts;
static int next_thread_id;

static int thread_id(void) {
    if (!ts.id) ts.id = __atomic_add_fetch(&next_thread_id, 1, __ATOMIC_RELAXED);
    return ts.id;
}

/* ===================================================================
 * Contexts
 * =================================================================== */

struct CUctx_st {
    unsigned magic;
    int dev;
    int primary, retains; /* a primary context is active while retains > 0 */
    int destroyed;
    unsigned flags;
    CUstream legacy;      /* the legacy default stream, made on first use */
    CUresult sticky;      /* set when device work faulted; atomic, read without mu by STICKY_POINT */
    int reset;            /* cuDevicePrimaryCtxReset was called after a fault */
    unsigned long long id; /* cuCtxGetId: new for each context, and each time a primary one becomes active */
    /* Its live user streams and events, which go with it when it is
     * destroyed (cuCtxDestroy): sim_stat's live counts drop them then. */
    long long live_streams, live_events;
};
static unsigned long long last_ctx_id;
static struct CUctx_st primary_ctx[MAX_DEVICES];

/* The calling thread's current context, ready for use. mu held. */
static CUresult current_ctx(CUcontext *out) {
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    if (ts.depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = ts.stack[ts.depth - 1];
    if (c->destroyed || (c->primary && c->retains == 0)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (c->sticky) return c->sticky;
    *out = c;
    return CUDA_SUCCESS;
}

/* ===================================================================
 * Memory the device can reach: device allocations, pinned host
 * allocations and registered host ranges, in one table.
 * =================================================================== */

enum { MEM_DEVICE = 1, MEM_HOSTALLOC, MEM_REGISTERED };
struct range { uintptr_t start; size_t len; int kind; unsigned flags; CUcontext ctx; };

/* The table is an interval treap: ordered by (start, seq), a heap by
 * priority, each node knowing the largest end in its subtree, so that the
 * lookups below take O(log n) (plus the matches) and so do insert and
 * remove. Ranges may overlap (registered memory over a device allocation,
 * say); where several match, the one of lowest (start, seq) wins. Each node
 * is allocated apart: a struct range * stays valid until its range_remove. */
struct rnode {
    struct range r; /* first: a struct range * is its node */
    unsigned long long seq;
    unsigned prio;
    uintptr_t maxend; /* largest start+len in this subtree */
    struct rnode *left, *right;
};
static struct rnode *rroot;
static unsigned long long rseq;
static unsigned rrand = 2463534242u;

static uintptr_t rend(const struct rnode *n) { return n->r.start + n->r.len; }
static void rfix(struct rnode *n) {
    uintptr_t m = rend(n);
    if (n->left && n->left->maxend > m) m = n->left->maxend;
    if (n->right && n->right->maxend > m) m = n->right->maxend;
    n->maxend = m;
}
static int rless(const struct rnode *a, const struct rnode *b) {
    return a->r.start < b->r.start || (a->r.start == b->r.start && a->seq < b->seq);
}
static struct rnode *rinsert(struct rnode *t, struct rnode *n) {
    if (!t) return n;
    if (rless(n, t)) {
        t->left = rinsert(t->left, n);
        if (t->left->prio > t->prio) { /* rotate right */
            struct rnode *l = t->left;
            t->left = l->right; rfix(t);
            l->right = t; t = l;
        }
    } else {
        t->right = rinsert(t->right, n);
        if (t->right->prio > t->prio) { /* rotate left */
            struct rnode *r = t->right;
            t->right = r->left; rfix(t);
            r->left = t; t = r;
        }
    }
    rfix(t);
    return t;
}
static struct rnode *rmerge(struct rnode *a, struct rnode *b) { /* all of a before all of b */
    if (!a) return b;
    if (!b) return a;
    if (a->prio > b->prio) { a->right = rmerge(a->right, b); rfix(a); return a; }
    b->left = rmerge(a, b->left); rfix(b);
    return b;
}
static struct rnode *rdelete(struct rnode *t, struct rnode *n) {
    if (!t) return NULL;
    if (t == n) return rmerge(t->left, t->right);
    if (rless(n, t)) t->left = rdelete(t->left, n);
    else t->right = rdelete(t->right, n);
    rfix(t);
    return t;
}
/* The node of lowest key in t holding p. */
static struct rnode *rstab(struct rnode *t, uintptr_t p) {
    if (!t || t->maxend <= p) return NULL;
    struct rnode *f = rstab(t->left, p);
    if (f) return f;
    if (t->r.start > p) return NULL; /* so is every start on the right */
    if (p - t->r.start < t->r.len) return t;
    return rstab(t->right, p);
}
static struct rnode *rat(struct rnode *t, uintptr_t start, int kind) {
    while (t && t->r.start != start) t = start < t->r.start ? t->left : t->right;
    if (!t) return NULL;
    /* equal starts sit on both sides of the first one found */
    struct rnode *f = rat(t->left, start, kind);
    if (f) return f;
    if (t->r.kind == kind) return t;
    return rat(t->right, start, kind);
}
/* host_overlap's walk: the kind of the non-device ranges of t overlapping
 * [start, end), pinned allocations first. */
static int roverlap(struct rnode *t, uintptr_t start, uintptr_t end, int kind) {
    if (!t || t->maxend <= start || kind == MEM_HOSTALLOC) return kind;
    kind = roverlap(t->left, start, end, kind);
    if (t->r.start >= end) return kind; /* nothing on the right starts before end */
    if (t->r.kind != MEM_DEVICE && start < rend(t))
        if (!kind || t->r.kind == MEM_HOSTALLOC) kind = t->r.kind;
    return roverlap(t->right, start, end, kind);
}

static struct range *range_containing(uintptr_t p) {
    struct rnode *n = rstab(rroot, p);
    return n ? &n->r : NULL;
}
static struct range *range_at(uintptr_t start, int kind) {
    struct rnode *n = rat(rroot, start, kind);
    return n ? &n->r : NULL;
}
/* The kind of a pinned or registered range overlapping [start, start+len), pinned
 * allocations first; 0 if none. */
static int host_overlap(uintptr_t start, size_t len) {
    return roverlap(rroot, start, start + len, 0);
}
/* Whether the device may touch [p, p+len): every byte lies in some range.
 * A range may span several adjacent ones (two registrations side by side):
 * with unified addressing each is mapped at its host address, so the device
 * sees them as one run of memory. The conformance test
 * TestConformanceKernelReadsAcrossAdjacentRegistrations checks this on the GPU. */
static int reach_graph_mem; /* set while enqueue checks submitted work: graph allocations count (in_graph_mem) */
static int in_graph_mem(uintptr_t p, size_t len);
static int reachable(uintptr_t p, size_t len) {
    if (reach_graph_mem && in_graph_mem(p, len)) return 1;
    while (len > 0) {
        struct range *r = range_containing(p);
        if (!r) return 0;
        size_t left = r->len - (p - r->start);
        if (len <= left) return 1;
        p += left;
        len -= left;
    }
    return 1;
}
/* Whether a driver copy or memset (cuMemcpy*, cuMemsetD*) may cover [p, p+len)
 * on one side: a range that starts in pinned or registered host memory must
 * end in that same range. The H200 (driver 580) answers CUDA_ERROR_INVALID_VALUE
 * for a copy or memset over two adjacent registrations, though a kernel may
 * read across them (reachable). A range that starts there and runs on into
 * memory registered by no one is refused the same way here: the driver looks
 * up the registration of the start, so it most likely does too (not measured).
 * Device allocations are not held to this. */
static int one_host_range(uintptr_t p, size_t len) {
    if (!len) return 1;
    struct range *r = range_containing(p);
    if (!r || r->kind == MEM_DEVICE) return 1;
    return len <= r->len - (p - r->start);
}
static void range_add(uintptr_t start, size_t len, int kind, unsigned flags, CUcontext ctx) {
    struct rnode *n = xcalloc(1, sizeof *n);
    n->r = (struct range){ start, len, kind, flags, ctx };
    n->seq = rseq++;
    rrand ^= rrand << 13; rrand ^= rrand >> 17; rrand ^= rrand << 5; /* xorshift32 */
    n->prio = rrand;
    n->maxend = rend(n);
    rroot = rinsert(rroot, n);
}
static void range_remove(struct range *r) {
    struct rnode *n = (struct rnode *)r;
    rroot = rdelete(rroot, n);
    free(n);
}
/* Append to *out the registered host ranges of context ctx in t. */
static void rregistered(struct rnode *t, CUcontext ctx, struct range ***out, int *n, int *cap) {
    if (!t) return;
    rregistered(t->left, ctx, out, n, cap);
    if (t->r.kind == MEM_REGISTERED && t->r.ctx == ctx) { GROW(*out, *cap, *n + 1); (*out)[(*n)++] = &t->r; }
    rregistered(t->right, ctx, out, n, cap);
}
/* The device memory of device dev in use: a walk of the whole table. */
static size_t rdevice_used(struct rnode *t, int dev) {
    if (!t) return 0;
    size_t used = rdevice_used(t->left, dev) + rdevice_used(t->right, dev);
    if (t->r.kind == MEM_DEVICE && t->r.ctx->dev == dev) used += t->r.len;
    return used;
}

/* ===================================================================
 * Kernels: the test kernels, recognised by PTX entry name, run natively.
 * Each writes every element (as if launched over the whole range);
 * the grid size is not used.
 * =================================================================== */

enum { K_ADD_ONE, K_FILL, K_SUM, K_SPIN, K_SAXPY, K_SCALE_F32, K_SCALE_I32, K_OFFSET_F32, K_OFFSET_I32, K_JACOBI,
       K_AXPY, K_ADD_VECS, K_ADD_BIAS, K_COUNT };
/* size: each parameter's bytes; cuFuncGetParamInfo works out where each
 * sits in the parameter buffer from them (the C ABI's alignment). */
static const struct kernel_def {
    const char *name; int nargs; unsigned char size[6];
    int static_smem; /* bytes of __shared__ the kernel declares */
} kernels[K_COUNT] = {
    [K_ADD_ONE] = { "add_one_i32", 2, { 8, 8 } },  /* (int *data, u64 n) */
    [K_FILL] = { "fill_i32", 3, { 8, 8, 4 } },     /* (int *data, u64 n, int value) */
    [K_SUM] = { "sum_i64", 4, { 8, 8, 8, 8 }, 8192 }, /* (const i64 *in, u64 n, i64 *out, u64 spin_ns); long long part[1024] */
    [K_SPIN] = { "spin", 1, { 8 } },               /* (u64 ns) */
    [K_SAXPY] = { "saxpy", 4, { 4, 4, 8, 8 } },    /* (int n, float a, const float *x, float *y) */
    /* C++ kernels (mangled names): template <T> scale(T *data, T k, u64 n) for float and int, and
     * ops::offset(T *data, T k, u64 n) overloaded for float and int. */
    [K_SCALE_F32] = { "_Z5scaleIfEvPT_S0_y", 3, { 8, 4, 8 } },
    [K_SCALE_I32] = { "_Z5scaleIiEvPT_S0_y", 3, { 8, 4, 8 } },
    [K_OFFSET_F32] = { "_ZN3ops6offsetEPffy", 3, { 8, 4, 8 } },
    [K_OFFSET_I32] = { "_ZN3ops6offsetEPiiy", 3, { 8, 4, 8 } },
    /* internal/benchrows/jacobi.ll: (const float *A, const double *b, const double *x, double *x_new, double *residual, u64 n) */
    [K_JACOBI] = { "jacobi_f64", 6, { 8, 8, 8, 8, 8, 8 } },
    /* internal/kernels/typed.ptx: axpy(float a, const float *x, float *y, int n); add_vecs(Vecs), a struct
     * { const float *a, *b; float *c; int n; } of 32 bytes by value; add_bias(float *x, int n) adds the
     * module's __constant__ float "bias" (its address goes in arg[5]) */
    [K_AXPY] = { "_Z4axpyfPKfPfi", 4, { 4, 8, 8, 4 } },
    [K_ADD_VECS] = { "_Z8add_vecs4Vecs", 1, { 32 } },
    [K_ADD_BIAS] = { "add_bias", 2, { 8, 4 } },
};

/* ===================================================================
 * Tasks: one unit of device work, as queued on a stream or held in a
 * graph node.
 * =================================================================== */

enum { T_NOP, T_KERNEL, T_COPY, T_SET, T_WAIT, T_WRITE, T_HOST, T_GRAPH, T_FREE, T_GALLOC };
struct prog;
struct task {
    int kind;
    int kernel; uint64_t arg[6];               /* T_KERNEL */
    void *dst; const void *src; size_t n;      /* T_COPY bytes; T_SET elements; T_WAIT/T_WRITE word; T_FREE, T_GALLOC start (T_GALLOC: n bytes) */
    int dev_dst, dev_src;                      /* T_COPY: which sides must be device-reachable */
    size_t height, dpitch, spitch;             /* T_COPY of rows (cuMemcpy2D): n bytes a row; 0 rows: one range */
    unsigned width; uint64_t value;            /* T_SET element bytes and value; T_WAIT/T_WRITE */
    unsigned flags;                            /* T_WAIT comparison */
    CUhostFn fn; void *user;                   /* T_HOST */
    struct prog *prog;                         /* T_GRAPH: a graph launched into a capture */
};

static int node_type(const struct task *t) {
    switch (t->kind) {
    case T_KERNEL: return CU_GRAPH_NODE_TYPE_KERNEL;
    case T_COPY: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case T_SET: return CU_GRAPH_NODE_TYPE_MEMSET;
    case T_HOST: return CU_GRAPH_NODE_TYPE_HOST;
    case T_FREE: return CU_GRAPH_NODE_TYPE_MEM_FREE;
    case T_GALLOC: return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    case T_GRAPH: return CU_GRAPH_NODE_TYPE_GRAPH;
    case T_WAIT: case T_WRITE: return CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    default: return CU_GRAPH_NODE_TYPE_EMPTY;
    }
}

/* The bytes from the start of one side of a copy to its end: one range, or
 * the rows of a 2D copy (the last row ends n bytes after its start). */
static size_t copy_span(const struct task *t, int dst) {
    if (!t->height || !t->n) return t->n;
    return (t->height - 1) * (dst ? t->dpitch : t->spitch) + t->n;
}

/* Whether every address the task touches on the device side is reachable. mu held. */
static int task_reachable(const struct task *t) {
    uintptr_t a0 = (uintptr_t)t->arg[0], a2 = (uintptr_t)t->arg[2];
    switch (t->kind) {
    case T_KERNEL:
        switch (t->kernel) {
        case K_ADD_ONE: case K_FILL: return reachable(a0, t->arg[1] * 4);
        case K_SUM: return reachable(a0, t->arg[1] * 8) && reachable(a2, 8);
        case K_SAXPY: {
            int32_t n = (int32_t)(uint32_t)t->arg[0];
            size_t len = n > 0 ? (size_t)n * 4 : 0;
            return reachable((uintptr_t)t->arg[2], len) && reachable((uintptr_t)t->arg[3], len);
        }
        case K_SCALE_F32: case K_SCALE_I32: case K_OFFSET_F32: case K_OFFSET_I32:
            return reachable(a0, t->arg[2] * 4);
        case K_AXPY: {
            int32_t n = (int32_t)(uint32_t)t->arg[3];
            size_t len = n > 0 ? (size_t)n * 4 : 0;
            return reachable((uintptr_t)t->arg[1], len) && reachable((uintptr_t)t->arg[2], len);
        }
        case K_ADD_VECS: {
            int32_t n = (int32_t)(uint32_t)t->arg[3];
            size_t len = n > 0 ? (size_t)n * 4 : 0;
            return reachable(a0, len) && reachable((uintptr_t)t->arg[1], len) && reachable(a2, len);
        }
        case K_ADD_BIAS: {
            int32_t n = (int32_t)(uint32_t)t->arg[1];
            return reachable(a0, n > 0 ? (size_t)n * 4 : 0) && reachable((uintptr_t)t->arg[5], 4);
        }
        case K_JACOBI: {
            uint64_t n = t->arg[5];
            return reachable(a0, n * n * 4) && reachable((uintptr_t)t->arg[1], n * 8) && reachable(a2, n * 8) &&
                   reachable((uintptr_t)t->arg[3], n * 8) && reachable((uintptr_t)t->arg[4], 8);
        }
        default: return 1;
        }
    case T_COPY:
        if (t->n && (!t->dst || !t->src)) return 0; /* a NULL side: CUDA_ERROR_INVALID_VALUE, as the driver */
        return (!t->dev_dst || reachable((uintptr_t)t->dst, copy_span(t, 1))) &&
               (!t->dev_src || reachable((uintptr_t)t->src, copy_span(t, 0)));
    case T_SET: return reachable((uintptr_t)t->dst, t->n * t->width);
    case T_WAIT: case T_WRITE: return reachable((uintptr_t)t->dst, t->width);
    default: return 1;
    }
}

/* Whether each side of a copy or memset lies in one pinned or registered
 * range where it starts in one (one_host_range). mu held. */
static int task_one_range(const struct task *t) {
    switch (t->kind) {
    case T_COPY:
        return one_host_range((uintptr_t)t->dst, copy_span(t, 1)) && one_host_range((uintptr_t)t->src, copy_span(t, 0));
    case T_SET: return one_host_range((uintptr_t)t->dst, t->n * t->width);
    default: return 1;
    }
}

static int wait_satisfied(const struct task *t) {
    uint64_t v, c = t->value;
    int64_t diff;
    if (t->width == 8) {
        v = __atomic_load_n((uint64_t *)t->dst, __ATOMIC_ACQUIRE);
        diff = (int64_t)(v - c);
    } else {
        v = __atomic_load_n((uint32_t *)t->dst, __ATOMIC_ACQUIRE);
        c = (uint32_t)c;
        diff = (int32_t)(uint32_t)(v - c);
    }
    switch (t->flags & 3) {
    case CU_STREAM_WAIT_VALUE_GEQ: return diff >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return v == c;
    case CU_STREAM_WAIT_VALUE_AND: return (v & c) != 0;
    default: return t->width == 8 ? ~(v | c) != 0 : (uint32_t)~(v | c) != 0;
    }
}

/* A graph allocation (see "Graph memory" below); its device range has flags GRAPH_FLAG. */
enum { GRAPH_FLAG = 0x40000 };
struct gmem {
    uintptr_t p;
    size_t len;
    CUcontext ctx;
    int refs;        /* the alloc nodes (of graphs, of executable graphs) at p */
    int live;        /* allocated: a launch ran its alloc node, no free has run since */
    int outstanding; /* a launch that allocates it was submitted, and no free since */
    struct gmem *next;
};
static CUresult run_prog(struct prog *p);
static void free_async_run(uintptr_t p);
static void galloc_run(uintptr_t p);

/* Run one task on a worker thread, mu not held. */
static CUresult run_task(const struct task *t) {
    if (t->kind == T_GRAPH) return run_prog(t->prog);
    LOCK();
    int ok = task_reachable(t);
    UNLOCK();
    if (!ok) {
        fprintf(stderr, "purecuda sim: %s touched memory the device cannot reach (illegal address)\n",
                t->kind == T_KERNEL ? kernels[t->kernel].name : "a copy, memset or stream memory operation");
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    switch (t->kind) {
    case T_KERNEL: {
        uint64_t n = t->arg[1];
        if (t->kernel == K_ADD_ONE) {
            int32_t *d = (int32_t *)(uintptr_t)t->arg[0];
            for (uint64_t i = 0; i < n; i++) d[i] += 1;
        } else if (t->kernel == K_FILL) {
            int32_t *d = (int32_t *)(uintptr_t)t->arg[0], v = (int32_t)(uint32_t)t->arg[2];
            for (uint64_t i = 0; i < n; i++) d[i] = v;
        } else if (t->kernel == K_SUM) {
            sleep_until(now_ns() + t->arg[3]);
            const int64_t *in = (const int64_t *)(uintptr_t)t->arg[0];
            int64_t s = 0;
            for (uint64_t i = 0; i < n; i++) s += in[i];
            *(int64_t *)(uintptr_t)t->arg[2] = s;
        } else if (t->kernel == K_SPIN) {
            sleep_until(now_ns() + t->arg[0]);
        } else if (t->kernel == K_SAXPY) {
            int32_t len = (int32_t)(uint32_t)t->arg[0];
            float a;
            uint32_t bits = (uint32_t)t->arg[1];
            memcpy(&a, &bits, 4);
            const float *x = (const float *)(uintptr_t)t->arg[2];
            float *y = (float *)(uintptr_t)t->arg[3];
            for (int32_t i = 0; i < len; i++) y[i] = a * x[i] + y[i];
        } else if (t->kernel == K_AXPY || t->kernel == K_ADD_VECS || t->kernel == K_ADD_BIAS) {
            float a, bias;
            uint32_t bits = (uint32_t)t->arg[0];
            memcpy(&a, &bits, 4);
            int32_t len = (int32_t)(uint32_t)t->arg[t->kernel == K_ADD_BIAS ? 1 : 3];
            if (t->kernel == K_AXPY) {
                const float *x = (const float *)(uintptr_t)t->arg[1];
                float *y = (float *)(uintptr_t)t->arg[2];
                for (int32_t i = 0; i < len; i++) y[i] = a * x[i] + y[i];
            } else if (t->kernel == K_ADD_VECS) {
                const float *va = (const float *)(uintptr_t)t->arg[0], *vb = (const float *)(uintptr_t)t->arg[1];
                float *vc = (float *)(uintptr_t)t->arg[2];
                for (int32_t i = 0; i < len; i++) vc[i] = va[i] + vb[i];
            } else {
                float *x = (float *)(uintptr_t)t->arg[0];
                memcpy(&bias, (const void *)(uintptr_t)t->arg[5], 4);
                for (int32_t i = 0; i < len; i++) x[i] += bias;
            }
        } else if (t->kernel == K_JACOBI) {
            const float *A = (const float *)(uintptr_t)t->arg[0];
            const double *b = (const double *)(uintptr_t)t->arg[1], *x = (const double *)(uintptr_t)t->arg[2];
            double *xn = (double *)(uintptr_t)t->arg[3], *res = (double *)(uintptr_t)t->arg[4];
            n = t->arg[5];
            for (uint64_t i = 0; i < n; i++) {
                double s = 0;
                for (uint64_t j = 0; j < n; j++) s += (double)A[i * n + j] * x[j];
                double dx = (b[i] - s) / A[i * n + i];
                xn[i] = x[i] + dx;
                *res += dx < 0 ? -dx : dx;
            }
        } else {
            uint64_t len = t->arg[2];
            uint32_t bits = (uint32_t)t->arg[1];
            float kf;
            int32_t ki = (int32_t)bits;
            memcpy(&kf, &bits, 4);
            float *f = (float *)(uintptr_t)t->arg[0];
            int32_t *d = (int32_t *)(uintptr_t)t->arg[0];
            for (uint64_t i = 0; i < len; i++) switch (t->kernel) {
                case K_SCALE_F32: f[i] *= kf; break;
                case K_SCALE_I32: d[i] *= ki; break;
                case K_OFFSET_F32: f[i] += kf; break;
                default: d[i] += ki; break;
                }
        }
        break;
    }
    case T_COPY:
        if (!t->height) memmove(t->dst, t->src, t->n);
        else
            for (size_t y = 0; y < t->height; y++)
                memmove((char *)t->dst + y * t->dpitch, (const char *)t->src + y * t->spitch, t->n);
        break;
    case T_SET:
        if (t->width == 1) memset(t->dst, (int)t->value, t->n);
        else if (t->width == 2) for (size_t i = 0; i < t->n; i++) ((uint16_t *)t->dst)[i] = (uint16_t)t->value;
        else for (size_t i = 0; i < t->n; i++) ((uint32_t *)t->dst)[i] = (uint32_t)t->value;
        break;
    case T_WAIT: while (!wait_satisfied(t)) nap(); break;
    case T_WRITE:
        if (t->width == 8) __atomic_store_n((uint64_t *)t->dst, t->value, __ATOMIC_RELEASE);
        else __atomic_store_n((uint32_t *)t->dst, (uint32_t)t->value, __ATOMIC_RELEASE);
        break;
    case T_HOST: t->fn(t->user); break;
    case T_FREE: free_async_run((uintptr_t)t->dst); break;
    case T_GALLOC: galloc_run((uintptr_t)t->dst); break;
    default: break;
    }
    return CUDA_SUCCESS;
}

/* ===================================================================
 * Graphs and their executable form.
 * A graph is a list of nodes in the order they were added, each with its
 * dependencies; an executable graph holds a "prog", an immutable copy of
 * the nodes, shared by reference with the launches still running it.
 * Replay runs the nodes one after another in that order (a valid
 * topological order, since a node is added after its dependencies).
 * =================================================================== */

struct CUgraphNode_st {
    struct task t;
    int type, index;
    struct CUgraphNode_st **deps;
    int ndeps;
    unsigned mark; /* scratch for the join check */
};
struct CUgraph_st {
    unsigned magic;
    struct CUgraphNode_st **nodes;
    int n, cap;
};
struct pnode { struct task t; int type, ndeps; int *deps; };
struct prog { int refs, n; struct pnode *nodes; };
struct CUgraphExec_st {
    unsigned magic;
    unsigned long long flags; /* cuGraphInstantiateWithFlags' */
    CUcontext ctx;
    struct prog *prog;
    struct op *last; /* the newest launch: launches of one graph run one at a time */
};

static void gmem_ref(uintptr_t p);
static void gmem_unref(uintptr_t p);
static void prog_ref(struct prog *p) { p->refs++; }
static void prog_unref(struct prog *p) { /* mu held */
    if (!p || --p->refs > 0) return;
    for (int i = 0; i < p->n; i++) {
        if (p->nodes[i].t.kind == T_GRAPH) prog_unref(p->nodes[i].t.prog);
        if (p->nodes[i].t.kind == T_GALLOC) gmem_unref((uintptr_t)p->nodes[i].t.dst);
        free(p->nodes[i].deps);
    }
    free(p->nodes);
    free(p);
}
static struct prog *prog_from_graph(CUgraph g) { /* mu held */
    struct prog *p = xcalloc(1, sizeof *p);
    p->refs = 1;
    p->n = g->n;
    p->nodes = xcalloc((size_t)g->n, sizeof *p->nodes);
    for (int i = 0; i < g->n; i++) {
        struct CUgraphNode_st *gn = g->nodes[i];
        struct pnode *pn = &p->nodes[i];
        pn->t = gn->t;
        pn->type = gn->type;
        pn->ndeps = gn->ndeps;
        pn->deps = xcalloc((size_t)gn->ndeps, sizeof *pn->deps);
        for (int j = 0; j < gn->ndeps; j++) pn->deps[j] = gn->deps[j]->index;
        if (pn->t.kind == T_GRAPH) prog_ref(pn->t.prog);
        if (pn->t.kind == T_GALLOC) gmem_ref((uintptr_t)pn->t.dst);
    }
    return p;
}
static CUresult run_prog(struct prog *p) { /* mu not held; the caller holds a reference */
    for (int i = 0; i < p->n; i++) {
        CUresult r = run_task(&p->nodes[i].t);
        if (r) return r;
    }
    return CUDA_SUCCESS;
}

static CUgraph graph_new(void) {
    CUgraph g = handle_alloc(&free_graphs, sizeof *g);
    g->magic = MAGIC_GRAPH;
    st.live_graphs++;
    return g;
}
static struct CUgraphNode_st *graph_add(CUgraph g, const struct task *t, struct CUgraphNode_st **deps, int ndeps) {
    struct CUgraphNode_st *n = xcalloc(1, sizeof *n);
    n->t = *t;
    n->type = node_type(t);
    n->index = g->n;
    n->ndeps = ndeps;
    n->deps = xcalloc((size_t)ndeps, sizeof *deps);
    if (ndeps) memcpy(n->deps, deps, (size_t)ndeps * sizeof *deps);
    if (t->kind == T_GRAPH) prog_ref(t->prog);
    if (t->kind == T_GALLOC) gmem_ref((uintptr_t)t->dst);
    GROW(g->nodes, g->cap, g->n + 1);
    g->nodes[g->n++] = n;
    return n;
}
static void graph_free(CUgraph g) { /* mu held */
    for (int i = 0; i < g->n; i++) {
        if (g->nodes[i]->t.kind == T_GRAPH) prog_unref(g->nodes[i]->t.prog);
        if (g->nodes[i]->t.kind == T_GALLOC) gmem_unref((uintptr_t)g->nodes[i]->t.dst);
        free(g->nodes[i]->deps);
        free(g->nodes[i]);
    }
    free(g->nodes);
    g->nodes = NULL;
    g->n = g->cap = 0;
    g->magic = 0;
    st.live_graphs--;
    handle_free(&free_graphs, g);
}

/* ===================================================================
 * Streams and the work queued on them.
 * An op is a task submitted to a stream. It is done when the worker has
 * run it; it starts only when its dependencies (ops on other streams:
 * implicit legacy-stream ordering, event waits) are done. Ops are
 * reference counted: the queue, stream->last, events and other ops'
 * dependency lists hold them.
 * =================================================================== */

struct op {
    int refs, done;
    struct op *next;
    struct op **deps;
    int ndeps, capdeps;
    struct task t;
    void *staged; /* owned copy of pageable source memory */
    uint64_t t_done;
};

enum { S_USER, S_LEGACY, S_PER_THREAD };
struct capture;
struct CUstream_st {
    unsigned magic;
    CUcontext ctx;
    unsigned flags;
    int prio, kind;
    struct op *head, *tail; /* queued, not yet done */
    struct op *last;        /* newest op, done or not */
    int has_worker, destroyed;
    struct CUstream_st **box;        /* with a worker: where it finds this stream (stream_detach) */
    unsigned long long id;           /* cuStreamGetId: never reused */
    struct CUstream_st *prev, *next; /* all_streams */
    /* capture state */
    struct capture *cap;
    struct CUgraphNode_st **cdeps; /* what the next captured node depends on */
    int ncdeps, capcdeps;
    CUgraphNode *info_nodes;       /* arrays handed out by cuStreamGetCaptureInfo */
    CUgraphEdgeData *info_edges;
};
static CUstream all_streams;
static int fences_active; /* device fences in progress (on any device) */

static int pending(const struct op *o) { return o && !o->done; }
static int is_blocking(CUstream s) { return s->kind != S_LEGACY && !(s->flags & CU_STREAM_NON_BLOCKING); }

static void op_ref(struct op *o) { if (o) o->refs++; }
static void op_unref(struct op *o) { /* mu held */
    if (!o || --o->refs > 0) return;
    for (int i = 0; i < o->ndeps; i++) op_unref(o->deps[i]);
    free(o->deps);
    free(o->staged);
    if (o->t.kind == T_GRAPH) prog_unref(o->t.prog);
    free(o);
}
static void op_add_dep(struct op *o, struct op *dep) {
    if (!pending(dep)) return;
    GROW(o->deps, o->capdeps, o->ndeps + 1);
    op_ref(dep);
    o->deps[o->ndeps++] = dep;
}
static int deps_done(struct op *o) {
    for (int i = 0; i < o->ndeps; i++)
        if (!o->deps[i]->done) return 0;
    return 1;
}

static CUstream stream_new(CUcontext ctx, unsigned flags, int prio, int kind) {
    CUstream s = handle_alloc(&free_streams, sizeof *s);
    s->magic = MAGIC_STREAM;
    s->ctx = ctx;
    s->flags = flags;
    s->prio = prio;
    s->kind = kind;
    static unsigned long long ids;
    s->id = ++ids;
    s->next = all_streams;
    if (all_streams) all_streams->prev = s;
    all_streams = s;
    return s;
}
/* Unlink a destroyed stream whose work is all done; its struct goes to the
 * free list, for a stream created later. */
static void stream_retire(CUstream s) {
    free(s->box);
    s->box = NULL;
    if (s->prev) s->prev->next = s->next; else all_streams = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
    op_unref(s->last);
    s->last = NULL;
    free(s->cdeps); free(s->info_nodes); free(s->info_edges);
    s->cdeps = NULL; s->info_nodes = NULL; s->info_edges = NULL;
    handle_free(&free_streams, s);
}

/* A destroyed stream with a worker gives its handle back at once, as the
 * driver does even while its work is pending: its queue moves to a struct of
 * its own, which only the worker (through box) and all_streams know, and
 * its handle's struct goes to the free list for the next stream. mu held. */
static void stream_detach(CUstream h) {
    CUstream g = xcalloc(1, sizeof *g);
    *g = *h;
    if (g->prev) g->prev->next = g; else all_streams = g;
    if (g->next) g->next->prev = g;
    *g->box = g;
    handle_free(&free_streams, h);
}

/* A stream's worker runs its queue; it finds the stream through box, since
 * stream_detach may move it whenever mu is released. */
static void *worker_main(void *arg) {
    CUstream *box = arg, s;
    LOCK();
    for (;;) {
        while (!(*box)->head && !(*box)->destroyed) wait_cv();
        s = *box;
        if (!s->head) break;
        struct op *o = s->head;
        while (!deps_done(o)) wait_cv();
        /* An event record (T_NOP) does nothing: it completes with the lock
         * held, so that records queued behind one wait complete together,
         * as on the GPU, and no query sees them finish one by one. */
        CUcontext ctx = (*box)->ctx;
        if (!ctx->sticky && o->t.kind != T_NOP) {
            UNLOCK();
            CUresult r = run_task(&o->t);
            LOCK();
            if (r && !ctx->sticky) { __atomic_store_n(&ctx->sticky, r, __ATOMIC_RELEASE); st.illegal_addresses++; }
        }
        s = *box;
        o->done = 1;
        o->t_done = now_ns();
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        o->next = NULL;
        op_unref(o); /* the queue's reference */
        wake_all();
    }
    stream_retire(*box);
    UNLOCK();
    return NULL;
}

/* Queue a task on stream s (not capturing) after `after` (may be NULL), with the
 * legacy stream's implicit ordering. Returns the op; the queue holds it. mu held. */
static struct op *submit(CUstream s, const struct task *t, struct op *after) {
    struct op *o = xcalloc(1, sizeof *o);
    o->refs = 1;
    o->t = *t;
    if (t->kind == T_GRAPH) prog_ref(t->prog);
    if (t->kind == T_COPY && !reachable((uintptr_t)t->src, copy_span(t, 0)) &&
        !in_graph_mem((uintptr_t)t->src, copy_span(t, 0))) {
        /* pageable source: the driver copies it before returning (rows packed) */
        size_t rows = t->height ? t->height : 1;
        o->staged = xcalloc(rows, t->n);
        for (size_t y = 0; y < rows; y++)
            memcpy((char *)o->staged + y * t->n, (const char *)t->src + y * t->spitch, t->n);
        o->t.src = o->staged;
        o->t.spitch = t->n;
    }
    if (s->kind == S_LEGACY) {
        for (CUstream x = all_streams; x; x = x->next)
            if (x->ctx == s->ctx && is_blocking(x)) op_add_dep(o, x->last);
    } else if (is_blocking(s) && s->ctx->legacy) {
        op_add_dep(o, s->ctx->legacy->last);
    }
    op_add_dep(o, after);
    if (s->tail) s->tail->next = o; else s->head = o;
    s->tail = o;
    op_ref(o);
    op_unref(s->last);
    s->last = o;
    if (!s->has_worker) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 256 << 10);
        s->box = xcalloc(1, sizeof *s->box);
        *s->box = s;
        if (pthread_create(&th, &at, worker_main, s->box) != 0) {
            fputs("purecuda sim: cannot start a stream worker thread\n", stderr);
            abort();
        }
        pthread_attr_destroy(&at);
        s->has_worker = 1;
    }
    wake_all();
    return o;
}

/* Wait until every op in `ops` is done, then drop them. mu held. */
static void wait_ops(struct op **ops, int n) {
    for (int i = 0; i < n; i++)
        while (!ops[i]->done) wait_cv();
    for (int i = 0; i < n; i++) op_unref(ops[i]);
    free(ops);
}
/* Wait for all work submitted so far to streams of ctx (or, with ctx NULL,
 * of device dev). mu held. */
static void wait_idle(CUcontext ctx, int dev) {
    struct op **ops = NULL;
    int n = 0, cap = 0;
    for (CUstream x = all_streams; x; x = x->next)
        if ((ctx ? x->ctx == ctx : x->ctx->dev == dev) && pending(x->last)) {
            GROW(ops, cap, n + 1);
            op_ref(x->last);
            ops[n++] = x->last;
        }
    wait_ops(ops, n);
}
/* The device-wide fence of unregister and free: wait for all work submitted
 * so far while other threads' calls that pass the gate wait for us. mu held. */
static void fence_device(int dev) {
    fences_active++;
    st.fences++;
    wait_idle(NULL, dev);
    fences_active--;
    wake_all();
}
/* While a fence is in progress, calls from other threads that create or
 * destroy streams, events, modules or executable graphs, allocate, free,
 * register, instantiate, upload, or submit work (launches, copies, memsets,
 * host functions, event records, graph launches, begin capture) wait here,
 * as they block for the whole fence on the H200. Queries, synchronisation,
 * cuStreamWaitEvent, the stream memory operations, recording into a capture,
 * end capture, graph create/destroy/update and attribute queries do not.
 * mu held; released while waiting. */
static void gate(void) {
    if (fences_active) st.fenced_calls++; /* a call held by a fence */
    while (fences_active) wait_cv();
}

/* ===================================================================
 * Stream capture
 * =================================================================== */

struct capture {
    unsigned long long id;
    int mode, thread, invalidated;
    CUcontext ctx;
    CUstream origin;
    CUgraph graph;
    CUstream *members; /* origin and the streams that joined through events */
    int nmembers, capmembers;
    struct capture *next;
};
static struct capture *captures; /* begun and not yet ended */
static unsigned long long last_capture_id;

static void invalidate(struct capture *c) {
    if (!c->invalidated) { c->invalidated = 1; st.captures_invalidated++; }
}
static struct capture *find_capture(unsigned long long id) {
    for (struct capture *c = captures; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}
static void set_cdeps(CUstream s, struct CUgraphNode_st **deps, int n) {
    GROW(s->cdeps, s->capcdeps, n);
    if (n) memcpy(s->cdeps, deps, (size_t)n * sizeof *deps);
    s->ncdeps = n;
}
static void add_cdeps(CUstream s, struct CUgraphNode_st **deps, int n) {
    for (int i = 0; i < n; i++) {
        int have = 0;
        for (int j = 0; j < s->ncdeps; j++) have |= s->cdeps[j] == deps[i];
        if (!have) { GROW(s->cdeps, s->capcdeps, s->ncdeps + 1); s->cdeps[s->ncdeps++] = deps[i]; }
    }
}
static void capture_join(struct capture *c, CUstream s) {
    GROW(c->members, c->capmembers, c->nmembers + 1);
    c->members[c->nmembers++] = s;
    s->cap = c;
    s->ncdeps = 0;
}
static void capture_leave(struct capture *c, CUstream s) {
    for (int i = 0; i < c->nmembers; i++)
        if (c->members[i] == s) c->members[i] = c->members[--c->nmembers];
    s->cap = NULL;
    s->ncdeps = 0;
}
static void capture_end(struct capture *c) {
    for (int i = 0; i < c->nmembers; i++) { c->members[i]->cap = NULL; c->members[i]->ncdeps = 0; }
    for (struct capture **pp = &captures; *pp; pp = &(*pp)->next)
        if (*pp == c) { *pp = c->next; break; }
    free(c->members);
    free(c);
    st.active_captures--;
}

/* The rule for "potentially unsafe" calls (synchronising, allocating,
 * registering). Returns 900 after invalidating each capture the call
 * conflicts with, or 0. With whole_ctx set (cuCtxSynchronize) every capture
 * in that context conflicts, whatever the modes. mu held. */
static CUresult unsafe_call(CUcontext whole_ctx) {
    int me = thread_id(), hit = 0;
    for (struct capture *c = captures; c; c = c->next) {
        int conflict;
        if (whole_ctx) conflict = c->ctx == whole_ctx;
        else if (ts.mode == CU_STREAM_CAPTURE_MODE_RELAXED) conflict = 0;
        else if (c->thread == me) conflict = c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        else conflict = ts.mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (conflict) { invalidate(c); hit = 1; }
    }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Whether use of ctx's legacy stream would depend implicitly on a capture
 * (a blocking stream of ctx is capturing); optionally invalidate those. mu held. */
static int legacy_conflict(CUcontext ctx, int invalidate_them) {
    int hit = 0;
    for (struct capture *c = captures; c; c = c->next) {
        if (c->ctx != ctx) continue;
        for (int i = 0; i < c->nmembers; i++)
            if (is_blocking(c->members[i])) {
                hit = 1;
                if (invalidate_them) invalidate(c);
                break;
            }
    }
    return hit;
}

/* Record a task into the capture of stream s. mu held. */
static CUresult record(CUstream s, const struct task *t) {
    if (s->cap->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct CUgraphNode_st *n = graph_add(s->cap->graph, t, s->cdeps, s->ncdeps);
    set_cdeps(s, &n, 1);
    return CUDA_SUCCESS;
}

/* Every stream that joined the capture must have been joined back: each of
 * its current dependencies must be the origin's or an ancestor of them. mu held. */
static int capture_joined(struct capture *c) {
    static unsigned epoch;
    epoch++;
    struct CUgraphNode_st **todo = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < c->origin->ncdeps; i++) { GROW(todo, cap, n + 1); todo[n++] = c->origin->cdeps[i]; }
    while (n > 0) {
        struct CUgraphNode_st *x = todo[--n];
        if (x->mark == epoch) continue;
        x->mark = epoch;
        for (int i = 0; i < x->ndeps; i++) { GROW(todo, cap, n + 1); todo[n++] = x->deps[i]; }
    }
    free(todo);
    for (int i = 0; i < c->nmembers; i++)
        for (int j = 0; j < c->members[i]->ncdeps; j++)
            if (c->members[i]->cdeps[j]->mark != epoch) return 0;
    return 1;
}

/* ===================================================================
 * Resolving stream handles and enqueuing work
 * =================================================================== */

/* The stream a handle names; NULL and CU_STREAM_LEGACY are the current
 * context's legacy stream, CU_STREAM_PER_THREAD this thread's stream. mu held. */
static CUresult stream_of(CUstream h, CUstream *out) {
    CUcontext c;
    CUresult r;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        if ((r = current_ctx(&c))) return r;
        if (h != CU_STREAM_PER_THREAD) {
            if (!c->legacy) c->legacy = stream_new(c, 0, 0, S_LEGACY);
            *out = c->legacy;
            return CUDA_SUCCESS;
        }
        for (int i = 0; i < ts.npts; i++)
            if (ts.pts[i].ctx == c) { *out = ts.pts[i].s; return CUDA_SUCCESS; }
        if (ts.npts == (int)(sizeof ts.pts / sizeof ts.pts[0])) return CUDA_ERROR_OUT_OF_MEMORY;
        ts.pts[ts.npts].ctx = c;
        *out = ts.pts[ts.npts++].s = stream_new(c, 0, 0, S_PER_THREAD);
        return CUDA_SUCCESS;
    }
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    if (h->magic != MAGIC_STREAM) return CUDA_ERROR_INVALID_HANDLE;
    if (h->ctx->sticky) return h->ctx->sticky;
    *out = h;
    return CUDA_SUCCESS;
}

/* Common start of every enqueue: resolve the stream and say whether it is
 * capturing (the caller then records); else apply the legacy-stream capture
 * rule and, when `gated`, wait out device fences. mu held. */
static CUresult begin_enqueue(CUstream h, CUstream *out, int *capturing, int gated) {
    for (;;) {
        CUresult r = stream_of(h, out);
        if (r) return r;
        *capturing = (*out)->cap != NULL;
        if (*capturing) return CUDA_SUCCESS; /* recording into a capture passes the gate */
        if ((*out)->kind == S_LEGACY && legacy_conflict((*out)->ctx, 1)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        if (!gated || !fences_active) return CUDA_SUCCESS;
        st.fenced_calls++;
        while (fences_active) wait_cv();
    }
}

/* Enqueue (or record) a task on a stream. Copies, memsets and stream memory
 * operations are checked against reachable memory first (and copies and
 * memsets against ranges over several registrations); a copy into
 * pageable memory returns only when done, as the driver's does. */
static CUresult enqueue(CUstream h, const struct task *t) {
    CUstream s;
    int capturing;
    LOCK();
    CUresult r = begin_enqueue(h, &s, &capturing, t->kind != T_WAIT && t->kind != T_WRITE);
    /* Work may name a graph's allocations before the launch that allocates
     * them has run (in the graph, or after its launch): checked when it runs. */
    reach_graph_mem = 1;
    if (!r && t->kind != T_KERNEL && !(task_reachable(t) && task_one_range(t))) r = CUDA_ERROR_INVALID_VALUE;
    reach_graph_mem = 0;
    if (!r && capturing) r = record(s, t);
    else if (!r) {
        if (t->kind == T_COPY && (!reachable((uintptr_t)t->dst, copy_span(t, 1)) || !reachable((uintptr_t)t->src, copy_span(t, 0))))
            st.pageable_copies++;
        struct op *o = submit(s, t, NULL);
        if (t->kind == T_COPY && !reachable((uintptr_t)t->dst, copy_span(t, 1))) {
            CUcontext c = s->ctx; /* s may be destroyed, its handle reused, meanwhile */
            op_ref(o);
            while (!o->done) wait_cv();
            op_unref(o);
            r = c->sticky;
        }
    }
    UNLOCK();
    return r;
}

/* Run a task on the legacy stream and wait for it (the synchronous copies). */
static CUresult run_sync(const struct task *t) {
    CUstream s;
    int capturing;
    LOCK();
    CUresult r = begin_enqueue(NULL, &s, &capturing, 1);
    if (!r && !(task_reachable(t) && task_one_range(t))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        struct op *o = submit(s, t, NULL);
        op_ref(o);
        while (!o->done) wait_cv();
        op_unref(o);
        r = s->ctx->sticky;
    }
    UNLOCK();
    return r;
}

/* ===================================================================
 * API: initialisation, devices, contexts
 * =================================================================== */

CUresult cuInit(unsigned int flags) {
    FAIL_POINT("cuInit");
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!initialised) {
        const char *env = getenv("PURECUDA_SIM_DEVICES");
        ndevices = env && atoi(env) >= 2 && atoi(env) <= MAX_DEVICES ? atoi(env) : 1;
        for (int i = 0; i < ndevices; i++)
            primary_ctx[i] = (struct CUctx_st){ .magic = MAGIC_CTX, .dev = i, .primary = 1 };
        __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
    FAIL_POINT("cuDriverGetVersion");
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice dev) {
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    return dev >= 0 && dev < ndevices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    FAIL_POINT("cuDeviceGet");
    CUresult r = check_device(ordinal);
    if (r) return r;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    FAIL_POINT("cuDeviceGetCount");
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = ndevices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    FAIL_POINT("cuDeviceGetName");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "purecuda simulated H200");
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    FAIL_POINT("cuDeviceTotalMem");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    *bytes = TOTAL_MEM;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    FAIL_POINT("cuDeviceGetAttribute");
    static const struct { int attr, value; } attrs[] = {
        { 1, 1024 },        /* MAX_THREADS_PER_BLOCK */
        { 2, 1024 }, { 3, 1024 }, { 4, 64 },                  /* MAX_BLOCK_DIM_X/Y/Z */
        { 5, 2147483647 }, { 6, 65535 }, { 7, 65535 },      /* MAX_GRID_DIM_X/Y/Z */
        { 8, 49152 },       /* MAX_SHARED_MEMORY_PER_BLOCK */
        { 10, 32 },         /* WARP_SIZE */
        { 16, 132 },        /* MULTIPROCESSOR_COUNT */
        { 18, 0 },          /* INTEGRATED */
        { 19, 1 },          /* CAN_MAP_HOST_MEMORY */
        { 20, 0 },          /* COMPUTE_MODE: default */
        { 31, 1 },          /* CONCURRENT_KERNELS */
        { 39, 2048 },       /* MAX_THREADS_PER_MULTIPROCESSOR */
        { 40, 3 },          /* ASYNC_ENGINE_COUNT */
        { 41, 1 },          /* UNIFIED_ADDRESSING */
        { 75, 9 }, { 76, 0 },                                /* COMPUTE_CAPABILITY_MAJOR/MINOR */
        { 78, 1 },          /* STREAM_PRIORITIES_SUPPORTED */
        { 83, 1 },          /* MANAGED_MEMORY */
        { 88, 0 },          /* PAGEABLE_MEMORY_ACCESS */
        { 89, 1 },          /* CONCURRENT_MANAGED_ACCESS, as on an x86 host with an H200 */
        { 91, 1 },          /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
        { 92, 0 }, { 93, 0 }, { 94, 0 },                     /* the deprecated _V1 stream memory operations */
        { 99, 1 },          /* HOST_REGISTER_SUPPORTED */
        { 100, 0 },         /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES */
        { 113, 1 },         /* READ_ONLY_HOST_REGISTER_SUPPORTED */
        { 115, 1 },         /* MEMORY_POOLS_SUPPORTED: see "Memory pools" */
        { 122, 1 }, { 123, 1 },                              /* 64-bit stream memory operations, WAIT_VALUE_NOR */
        /* what package cuda's named getters read (an H200's values) */
        { 11, 2147483647 }, /* MAX_PITCH */
        { 33, 0x19 }, { 34, 0 }, { 50, 0 },                  /* PCI_BUS_ID (device 1 adds 0x10), PCI_DEVICE_ID, PCI_DOMAIN_ID */
        { 37, 6144 },       /* GLOBAL_MEMORY_BUS_WIDTH */
        { 38, 52428800 },   /* L2_CACHE_SIZE */
        { 81, 233472 },     /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
        { 95, 1 },          /* COOPERATIVE_LAUNCH */
        { 97, 232448 },     /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
        { 82, 65536 },      /* MAX_REGISTERS_PER_MULTIPROCESSOR */
        { 106, 32 },        /* MAX_BLOCKS_PER_MULTIPROCESSOR */
        { 111, 1024 },      /* RESERVED_SHARED_MEMORY_PER_BLOCK */
        { 120, 1 },         /* CLUSTER_LAUNCH */
        { 9, 65536 },       /* TOTAL_CONSTANT_MEMORY */
        { 12, 65536 },      /* MAX_REGISTERS_PER_BLOCK */
        { 13, 1980000 },    /* CLOCK_RATE, kHz */
        { 17, 0 },          /* KERNEL_EXEC_TIMEOUT */
        { 32, 1 },          /* ECC_ENABLED */
        { 36, 2619000 },    /* MEMORY_CLOCK_RATE, kHz */
        { 84, 0 },          /* MULTI_GPU_BOARD */
        { 86, 0 },          /* HOST_NATIVE_ATOMIC_SUPPORTED */
        { 102, 1 },         /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
        { 103, SIM_POSIX_FD }, /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: see "Pool IPC" */
        { 108, 82837504 },  /* MAX_PERSISTING_L2_CACHE_SIZE */
        { 116, 1 },         /* GPU_DIRECT_RDMA_SUPPORTED */
        { 125, 1 },         /* IPC_EVENT_SUPPORTED */
    };
    CUresult r = check_device(dev);
    if (r) return r;
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (attrs[i].attr == attrib) { *pi = attrs[i].value + (attrib == 33 ? 0x10 * dev : 0); return CUDA_SUCCESS; }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    FAIL_POINT("cuDevicePrimaryCtxRetain");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUcontext c = &primary_ctx[dev];
    /* After a fault, once the primary context was reset (or released by
     * all), it cannot be made again: the device is lost to the process, as
     * on the H200 (DESIGN.md, driver facts). */
    if (c->sticky && (c->reset || c->retains == 0)) {
        r = c->sticky;
        UNLOCK();
        return r;
    }
    if (c->retains++ == 0) c->id = __atomic_add_fetch(&last_ctx_id, 1, __ATOMIC_RELAXED);
    *pctx = c;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    FAIL_POINT("cuDevicePrimaryCtxRelease");
    CUresult r = check_device(dev);
    if (r) return r;
    LOCK();
    if (primary_ctx[dev].retains == 0) r = CUDA_ERROR_INVALID_CONTEXT;
    else primary_ctx[dev].retains--;
    UNLOCK();
    return r;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    FAIL_POINT("cuDevicePrimaryCtxGetState");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *flags = primary_ctx[dev].flags;
    *active = primary_ctx[dev].retains > 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
    FAIL_POINT("cuDevicePrimaryCtxSetFlags");
    CUresult r = check_device(dev);
    if (r) return r;
    LOCK();
    primary_ctx[dev].flags = flags;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    FAIL_POINT("cuDevicePrimaryCtxReset");
    CUresult r = check_device(dev);
    if (r) return r;
    LOCK();
    if (primary_ctx[dev].sticky) primary_ctx[dev].reset = 1; /* succeeds; the next retain fails (see cuDevicePrimaryCtxRetain) */
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev) {
    FAIL_POINT("cuCtxCreate");
    (void)params;
    CUresult r = check_device(dev);
    if (r) return r;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (ts.depth == (int)(sizeof ts.stack / sizeof ts.stack[0])) return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext c = xcalloc(1, sizeof *c);
    *c = (struct CUctx_st){ .magic = MAGIC_CTX, .dev = dev, .flags = flags,
                            .id = __atomic_add_fetch(&last_ctx_id, 1, __ATOMIC_RELAXED) };
    ts.stack[ts.depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
    FAIL_POINT("cuCtxDestroy");
    LOCK();
    CUresult r = CUDA_SUCCESS;
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!ctx || ctx->magic != MAGIC_CTX || ctx->primary) r = CUDA_ERROR_INVALID_CONTEXT;
    else {
        wait_idle(ctx, 0);
        ctx->destroyed = 1;
        ctx->magic = 0;
        /* Its streams and events go with it. */
        st.live_streams -= ctx->live_streams;
        st.live_events -= ctx->live_events;
        ctx->live_streams = ctx->live_events = 0;
        /* The driver drops the context's host registrations with it: the
         * memory may be registered again, in another context. */
        struct range **regs = NULL;
        int n = 0, cap = 0;
        rregistered(rroot, ctx, &regs, &n, &cap);
        for (int i = 0; i < n; i++) {
            st.registered_ranges--;
            st.registered_bytes -= (long long)regs[i]->len;
            range_remove(regs[i]);
        }
        free(regs);
        if (ts.depth > 0 && ts.stack[ts.depth - 1] == ctx) ts.depth--;
    }
    UNLOCK();
    return r;
}

static CUresult check_ctx_handle(CUcontext ctx) { /* mu held */
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    return ctx && ctx->magic == MAGIC_CTX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    FAIL_POINT("cuCtxSetCurrent");
    LOCK();
    CUresult r = ctx ? check_ctx_handle(ctx) : initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    /* A faulted context is still made current (measured on the H200);
     * every other call in it fails. */
    UNLOCK();
    if (r) return r;
    if (ctx && ts.depth == 0) ts.stack[ts.depth++] = ctx;
    else if (ctx) ts.stack[ts.depth - 1] = ctx;
    else if (ts.depth > 0) ts.depth--;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
    FAIL_POINT("cuCtxGetCurrent");
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = ts.depth ? ts.stack[ts.depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    FAIL_POINT("cuCtxPushCurrent");
    LOCK();
    CUresult r = check_ctx_handle(ctx);
    UNLOCK();
    if (r) return r;
    if (ts.depth == (int)(sizeof ts.stack / sizeof ts.stack[0])) return CUDA_ERROR_OUT_OF_MEMORY;
    ts.stack[ts.depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    FAIL_POINT("cuCtxPopCurrent");
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    if (ts.depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = ts.stack[--ts.depth];
    if (pctx) *pctx = c;
    return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *device, CUcontext ctx) {
    CUresult r;
    LOCK();
    if (!ctx) r = current_ctx(&ctx);
    else r = check_ctx_handle(ctx);
    if (!r && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *device = ctx->dev;
    UNLOCK();
    return r;
}
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) {
    FAIL_POINT("cuCtxGetId");
    STICKY_POINT();
    CUresult r;
    LOCK();
    if (!ctx) r = current_ctx(&ctx);
    else r = check_ctx_handle(ctx);
    if (!r && ctx->primary && ctx->retains == 0) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!r && !id) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *id = ctx->id;
    UNLOCK();
    return r;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    FAIL_POINT("cuCtxGetDevice");
    STICKY_POINT();
    return ctx_get_device(device, NULL);
}
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
    FAIL_POINT("cuCtxGetDevice");
    STICKY_POINT();
    return ctx_get_device(device, ctx);
}

static CUresult ctx_synchronize(CUcontext ctx) {
    CUresult r;
    LOCK();
    if (!ctx) r = current_ctx(&ctx);
    else r = check_ctx_handle(ctx);
    if (!r) r = unsafe_call(ctx);
    if (!r) {
        st.syncs_waiting++;
        wait_idle(ctx, 0);
        r = ctx->sticky;
    }
    UNLOCK();
    return r;
}
CUresult cuCtxSynchronize(void) {
    LOCK(); st.ctx_synchronize_calls++; UNLOCK();
    FAIL_POINT("cuCtxSynchronize");
    STICKY_POINT();
    return ctx_synchronize(NULL);
}
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
    LOCK(); st.ctx_synchronize_calls++; UNLOCK();
    FAIL_POINT("cuCtxSynchronize");
    STICKY_POINT();
    return ctx_synchronize(ctx);
}

/* ===================================================================
 * API: streams
 * =================================================================== */

static CUresult stream_create(CUstream *ph, unsigned int flags, int prio) {
    CUcontext c;
    if (!ph || flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    gate();
    CUresult r = current_ctx(&c);
    if (!r) {
        /* priorities run from -5 (greatest) to 0, as on the H200 */
        *ph = stream_new(c, flags, prio < -5 ? -5 : prio > 0 ? 0 : prio, S_USER);
        st.live_streams++;
        c->live_streams++;
    }
    UNLOCK();
    return r;
}
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    FAIL_POINT("cuCtxGetStreamPriorityRange");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    UNLOCK();
    if (r) return r;
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
    FAIL_POINT("cuStreamCreate");
    STICKY_POINT();
    return stream_create(ph, flags, 0);
}
CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority) {
    FAIL_POINT("cuStreamCreateWithPriority");
    STICKY_POINT();
    return stream_create(ph, flags, priority);
}

CUresult cuStreamDestroy_v2(CUstream h) {
    FAIL_POINT("cuStreamDestroy");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    gate();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD || h->magic != MAGIC_STREAM)
        r = CUDA_ERROR_INVALID_HANDLE;
    else {
        /* destroying the origin of a capture ends the capture; a joined stream just leaves it */
        if (h->cap && h->cap->origin == h) {
            graph_free(h->cap->graph);
            capture_end(h->cap);
        } else if (h->cap) {
            capture_leave(h->cap, h);
        }
        h->magic = 0;
        h->destroyed = 1;
        if (!h->ctx->destroyed) { /* else counted out with its context */
            st.live_streams--;
            h->ctx->live_streams--;
        }
        if (h->has_worker) stream_detach(h); /* its handle serves the next stream at once */
        else stream_retire(h);
        wake_all();
    }
    UNLOCK();
    return r;
}

/* The stream getters: find the stream, check the out pointer, copy a field. */
#define STREAM_GETTER(fn, type, field)                \
    CUresult fn(CUstream h, type *out) {              \
        FAIL_POINT(#fn);                              \
        CUstream s;                                   \
        LOCK();                                       \
        CUresult r = stream_of(h, &s);                \
        if (!r && !out) r = CUDA_ERROR_INVALID_VALUE; \
        if (!r) *out = s->field;                      \
        UNLOCK();                                     \
        return r;                                     \
    }
STREAM_GETTER(cuStreamGetFlags, unsigned int, flags)
STREAM_GETTER(cuStreamGetCtx, CUcontext, ctx)
STREAM_GETTER(cuStreamGetPriority, int, prio)

CUresult cuStreamGetId(CUstream h, unsigned long long *id) {
    FAIL_POINT("cuStreamGetId");
    STICKY_POINT();
    CUstream s;
    LOCK();
    CUresult r = stream_of(h, &s);
    if (!r && !id) r = CUDA_ERROR_INVALID_VALUE;
    /* The H200 refuses it on a capturing stream and invalidates the capture. */
    if (!r && s->cap) {
        invalidate(s->cap);
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (!r) *id = s->id;
    UNLOCK();
    return r;
}

/* Shared checks of cuStreamQuery and cuStreamSynchronize. mu held. */
static CUresult stream_check_sync(CUstream h, CUstream *out) {
    CUresult r = stream_of(h, out);
    if (!r) r = unsafe_call(NULL);
    if (r) return r;
    if ((*out)->cap) {
        invalidate((*out)->cap);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((*out)->kind == S_LEGACY && legacy_conflict((*out)->ctx, 1)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream h) {
    FAIL_POINT("cuStreamQuery");
    STICKY_POINT();
    CUstream s;
    LOCK();
    CUresult r = stream_check_sync(h, &s);
    if (!r && pending(s->last)) r = CUDA_ERROR_NOT_READY;
    UNLOCK();
    return r;
}

CUresult cuStreamSynchronize(CUstream h) {
    FAIL_POINT("cuStreamSynchronize");
    STICKY_POINT();
    CUstream s;
    LOCK();
    CUresult r = stream_check_sync(h, &s);
    if (!r) {
        struct op *o = s->last;
        CUcontext c = s->ctx; /* s may be destroyed, its handle reused, meanwhile */
        if (o) {
            st.syncs_waiting++;
            op_ref(o);
            while (!o->done) wait_cv();
            op_unref(o);
        }
        r = c->sticky;
    }
    UNLOCK();
    return r;
}

CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *user) {
    FAIL_POINT("cuLaunchHostFunc");
    STICKY_POINT();
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    struct task t = { .kind = T_HOST, .fn = fn, .user = user };
    return enqueue(h, &t);
}

/* ----- stream memory operations ----- */

static CUresult mem_op(CUstream h, CUdeviceptr addr, uint64_t value, unsigned flags, int kind, unsigned width) {
    if (addr % width) return CUDA_ERROR_INVALID_VALUE;
    if (kind == T_WAIT && (flags & ~(3u | CU_STREAM_WAIT_VALUE_FLUSH))) return CUDA_ERROR_INVALID_VALUE;
    if (kind == T_WRITE && flags > 1) return CUDA_ERROR_INVALID_VALUE;
    struct task t = { .kind = kind, .dst = (void *)(uintptr_t)addr, .value = value, .flags = flags, .width = width };
    return enqueue(h, &t);
}
CUresult cuStreamWaitValue32_v2(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
    FAIL_POINT("cuStreamWaitValue32");
    STICKY_POINT();
    return mem_op(h, addr, value, flags, T_WAIT, 4);
}
CUresult cuStreamWaitValue64_v2(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
    FAIL_POINT("cuStreamWaitValue64");
    STICKY_POINT();
    return mem_op(h, addr, value, flags, T_WAIT, 8);
}
CUresult cuStreamWriteValue32_v2(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
    FAIL_POINT("cuStreamWriteValue32");
    STICKY_POINT();
    return mem_op(h, addr, value, flags, T_WRITE, 4);
}
CUresult cuStreamWriteValue64_v2(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
    FAIL_POINT("cuStreamWriteValue64");
    STICKY_POINT();
    return mem_op(h, addr, value, flags, T_WRITE, 8);
}

/* ===================================================================
 * API: events
 * An event points at the op of its last record (NULL: never recorded,
 * which counts as complete), or, when last recorded in a capture, at that
 * capture's dependency set.
 * =================================================================== */

struct CUevent_st {
    unsigned magic, flags;
    CUcontext ctx;
    struct op *rec;
    int in_capture;
    unsigned long long cap_id;
    struct CUgraphNode_st **cdeps;
    int ncdeps, capcdeps;
};

CUresult cuEventCreate(CUevent *ph, unsigned int flags) {
    FAIL_POINT("cuEventCreate");
    STICKY_POINT();
    CUcontext c;
    if (!ph || flags > 7 || ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    gate();
    CUresult r = current_ctx(&c);
    if (!r) {
        CUevent e = handle_alloc(&free_events, sizeof *e);
        e->magic = MAGIC_EVENT;
        e->flags = flags;
        e->ctx = c;
        *ph = e;
        st.live_events++;
        c->live_events++;
        st.event_creates++;
    }
    UNLOCK();
    return r;
}

CUresult cuEventDestroy_v2(CUevent e) {
    FAIL_POINT("cuEventDestroy");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    gate();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!e || e->magic != MAGIC_EVENT) r = CUDA_ERROR_INVALID_HANDLE;
    else if (e->ctx->destroyed) r = CUDA_ERROR_CONTEXT_IS_DESTROYED; /* went with its context */
    else {
        e->magic = 0;
        op_unref(e->rec);
        e->rec = NULL;
        free(e->cdeps);
        e->cdeps = NULL;
        st.live_events--;
        e->ctx->live_events--;
        handle_free(&free_events, e);
    }
    UNLOCK();
    return r;
}

static CUresult event_record(CUevent e, CUstream h, unsigned flags) {
    CUstream s;
    int capturing;
    if (flags > CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !e || e->magic != MAGIC_EVENT ? CUDA_ERROR_INVALID_HANDLE
               : e->ctx->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED
               : begin_enqueue(h, &s, &capturing, 1);
    if (!r && e->ctx != s->ctx) r = CUDA_ERROR_INVALID_HANDLE; /* cuda.h: "must be from the same context" */
    if (!r && capturing) {
        if (s->cap->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (flags & CU_EVENT_RECORD_EXTERNAL) r = CUDA_ERROR_NOT_SUPPORTED;
        else {
            op_unref(e->rec);
            e->rec = NULL;
            e->in_capture = 1;
            e->cap_id = s->cap->id;
            GROW(e->cdeps, e->capcdeps, s->ncdeps);
            if (s->ncdeps) memcpy(e->cdeps, s->cdeps, (size_t)s->ncdeps * sizeof *s->cdeps);
            e->ncdeps = s->ncdeps;
        }
    } else if (!r) {
        struct task t = { .kind = T_NOP };
        struct op *o = submit(s, &t, NULL);
        op_ref(o);
        op_unref(e->rec);
        e->rec = o;
        e->in_capture = 0;
        st.event_records++;
    }
    UNLOCK();
    return r;
}
CUresult cuEventRecord(CUevent e, CUstream h) {
    FAIL_POINT("cuEventRecord");
    STICKY_POINT();
    return event_record(e, h, 0);
}
CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int flags) {
    FAIL_POINT("cuEventRecordWithFlags");
    STICKY_POINT();
    return event_record(e, h, flags);
}

/* Shared checks of cuEventQuery and cuEventSynchronize. An event last
 * recorded in a capture gives 907 while that capture is live (and the call
 * invalidates it), 1 once it is invalidated or ended. mu held. */
static CUresult event_check_sync(CUevent e) {
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    if (!e || e->magic != MAGIC_EVENT) return CUDA_ERROR_INVALID_HANDLE;
    /* The driver destroys a context's events with it; a query of one then
     * crashed the process on the H200. An error here lets tests see it. */
    if (e->ctx->destroyed) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (e->in_capture) {
        struct capture *c = find_capture(e->cap_id);
        if (!c || c->invalidated) return CUDA_ERROR_INVALID_VALUE;
        invalidate(c);
        return CUDA_ERROR_CAPTURED_EVENT;
    }
    return unsafe_call(NULL);
}

CUresult cuEventQuery(CUevent e) {
    FAIL_POINT("cuEventQuery");
    STICKY_POINT();
    LOCK();
    st.event_queries++;
    CUresult r = event_check_sync(e);
    if (!r && e->ctx->sticky) r = e->ctx->sticky;
    if (!r && pending(e->rec)) r = CUDA_ERROR_NOT_READY;
    UNLOCK();
    return r;
}

CUresult cuEventSynchronize(CUevent e) {
    FAIL_POINT("cuEventSynchronize");
    STICKY_POINT();
    LOCK();
    CUresult r = event_check_sync(e);
    if (!r && e->rec) {
        struct op *o = e->rec;
        st.syncs_waiting++;
        op_ref(o);
        while (!o->done) wait_cv();
        op_unref(o);
    }
    if (!r) r = e->ctx->sticky;
    UNLOCK();
    return r;
}

static CUresult event_elapsed(float *ms, CUevent a, CUevent b) {
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!ms) r = CUDA_ERROR_INVALID_VALUE;
    else if (!a || a->magic != MAGIC_EVENT || !b || b->magic != MAGIC_EVENT) r = CUDA_ERROR_INVALID_HANDLE;
    else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!a->rec || !b->rec) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!a->rec->done || !b->rec->done) r = CUDA_ERROR_NOT_READY;
    else *ms = (float)((double)((int64_t)(b->rec->t_done - a->rec->t_done)) / 1e6);
    UNLOCK();
    return r;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    FAIL_POINT("cuEventElapsedTime");
    STICKY_POINT();
    return event_elapsed(ms, a, b);
}
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
    FAIL_POINT("cuEventElapsedTime");
    STICKY_POINT();
    return event_elapsed(ms, a, b);
}

CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
    FAIL_POINT("cuStreamWaitEvent");
    STICKY_POINT();
    CUstream s;
    int capturing;
    LOCK();
    CUresult r = stream_of(h, &s);
    if (!r && (!e || e->magic != MAGIC_EVENT)) r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && flags > CU_EVENT_WAIT_EXTERNAL) r = CUDA_ERROR_INVALID_VALUE;
    if (r) goto out;
    struct capture *ec = e->in_capture ? find_capture(e->cap_id) : NULL;
    if (e->in_capture && !ec) {
        r = CUDA_ERROR_INVALID_VALUE; /* last recorded in a capture that has ended */
    } else if (ec) {
        /* the event holds captured work: s joins that capture (fork) or merges its dependencies (join) */
        if (s->cap == ec) {
            if (ec->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            else add_cdeps(s, e->cdeps, e->ncdeps);
        } else if (s->cap) {
            invalidate(s->cap);
            invalidate(ec);
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        } else if (s->kind == S_LEGACY) {
            invalidate(ec);
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        } else if (ec->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            capture_join(ec, s);
            set_cdeps(s, e->cdeps, e->ncdeps);
        }
    } else if (s->cap) {
        /* a capturing stream may not wait for work outside its capture */
        if (s->cap->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (flags & CU_EVENT_WAIT_EXTERNAL) r = CUDA_ERROR_NOT_SUPPORTED;
        else if (e->rec) {
            invalidate(s->cap);
            r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
    } else if (flags & CU_EVENT_WAIT_EXTERNAL) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        r = begin_enqueue(h, &s, &capturing, 0);
        if (!r && !capturing && pending(e->rec)) {
            struct task t = { .kind = T_NOP };
            submit(s, &t, e->rec);
        }
    }
out:
    UNLOCK();
    return r;
}

/* ===================================================================
 * API: capture
 * =================================================================== */

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    FAIL_POINT("cuThreadExchangeStreamCaptureMode");
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!mode || *mode < 0 || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    int old = ts.mode;
    ts.mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
    FAIL_POINT("cuStreamBeginCapture");
    STICKY_POINT();
    CUstream s;
    if (mode < 0 || mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    gate();
    CUresult r = stream_of(h, &s);
    if (!r && s->kind == S_LEGACY) r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (!r && s->cap) r = CUDA_ERROR_ILLEGAL_STATE; /* the capture in progress goes on */
    else if (!r) {
        struct capture *c = xcalloc(1, sizeof *c);
        c->id = ++last_capture_id;
        c->mode = mode;
        c->thread = thread_id();
        c->ctx = s->ctx;
        c->origin = s;
        c->graph = graph_new();
        c->next = captures;
        captures = c;
        capture_join(c, s);
        st.active_captures++;
    }
    UNLOCK();
    return r;
}

CUresult cuStreamEndCapture(CUstream h, CUgraph *phGraph) {
    FAIL_POINT("cuStreamEndCapture");
    STICKY_POINT();
    CUstream s;
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_of(h, &s);
    struct capture *c = r ? NULL : s->cap;
    if (!r && !c) r = CUDA_ERROR_ILLEGAL_STATE;
    else if (!r && c->origin != s) {
        invalidate(c);
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    } else if (!r && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != thread_id()) {
        /* refused, and the capture is over (as measured) */
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
        invalidate(c);
        graph_free(c->graph);
        capture_end(c);
        *phGraph = NULL;
    } else if (!r) {
        if (c->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (!capture_joined(c)) { invalidate(c); r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED; }
        CUgraph g = c->graph;
        capture_end(c);
        if (r) { graph_free(g); *phGraph = NULL; }
        else *phGraph = g;
    }
    UNLOCK();
    return r;
}

static CUstreamCaptureStatus capture_status(CUstream s) {
    return !s->cap ? CU_STREAM_CAPTURE_STATUS_NONE
         : s->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *status) {
    FAIL_POINT("cuStreamIsCapturing");
    STICKY_POINT();
    CUstream s;
    LOCK();
    CUresult r = stream_of(h, &s);
    if (!r && !status) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && s->kind == S_LEGACY && legacy_conflict(s->ctx, 0)) r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (!r) *status = capture_status(s);
    UNLOCK();
    return r;
}

CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                   const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps) {
    FAIL_POINT("cuStreamGetCaptureInfo");
    STICKY_POINT();
    CUstream s;
    LOCK();
    CUresult r = stream_of(h, &s);
    if (!r && (!status || (edges && !deps))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && s->kind == S_LEGACY && legacy_conflict(s->ctx, 0)) r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (!r) {
        *status = capture_status(s);
        if (*status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            if (id) *id = s->cap->id;
            if (graph) *graph = s->cap->graph;
            s->info_nodes = xrealloc(s->info_nodes, (size_t)(s->ncdeps + 1) * sizeof *s->info_nodes);
            s->info_edges = xrealloc(s->info_edges, (size_t)(s->ncdeps + 1) * sizeof *s->info_edges);
            for (int i = 0; i < s->ncdeps; i++) s->info_nodes[i] = s->cdeps[i];
            memset(s->info_edges, 0, (size_t)(s->ncdeps + 1) * sizeof *s->info_edges);
            if (deps) *deps = s->info_nodes;
            if (edges) *edges = s->info_edges;
            if (ndeps) *ndeps = (size_t)s->ncdeps;
        }
    }
    UNLOCK();
    return r;
}

/* ===================================================================
 * API: device and host memory
 * =================================================================== */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    FAIL_POINT("cuMemGetInfo");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    if (!r && (!free_bytes || !total)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        size_t used = rdevice_used(rroot, c->dev);
        *total = TOTAL_MEM;
        *free_bytes = used < TOTAL_MEM ? TOTAL_MEM - used : 0;
    }
    UNLOCK();
    return r;
}

/* Common start of the allocating, freeing and registering calls: the fence
 * gate, a context and the capture rule for potentially unsafe calls. mu held. */
static CUresult unsafe_prologue(CUcontext *c) {
    gate();
    CUresult r = current_ctx(c);
    return r ? r : unsafe_call(NULL);
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
    FAIL_POINT("cuMemAlloc");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r && (!dptr || size == 0)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        void *p = aligned_alloc(256, round_up(size, 256));
        if (!p) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            range_add((uintptr_t)p, size, MEM_DEVICE, 0, c);
            st.live_allocations++;
            *dptr = (CUdeviceptr)(uintptr_t)p;
        }
    }
    UNLOCK();
    return r;
}

static void managed_forget(uintptr_t start);
static int pool_shared(unsigned flags);
static void pool_free(unsigned flags, size_t len);
/* Free a device allocation or pinned host allocation starting at p, after
 * the device-wide fence. mu held. */
static int gmem_free_now(uintptr_t p);
static struct gmem *gmem_at(uintptr_t p);
static CUresult free_range(CUcontext c, uintptr_t p, int kind) {
    if (kind == MEM_DEVICE && gmem_at(p)) {
        /* a graph allocation: after the fence its alloc node has run */
        fence_device(c->dev);
        return gmem_free_now(p) > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    if (!range_at(p, kind)) return CUDA_ERROR_INVALID_VALUE;
    fence_device(c->dev);
    struct range *rg = range_at(p, kind); /* the table may have moved while we waited */
    if (!rg) return CUDA_ERROR_INVALID_VALUE;
    if (rg->flags & 0x20000 /* MANAGED_FLAG */) managed_forget(p);
    unsigned flags = rg->flags;
    size_t len = rg->len;
    int shared = (flags & 0x10000 /* POOL_FLAG */) && pool_shared(flags);
    range_remove(rg);
    if (shared) pool_free(flags, len); /* an imported or exportable pool's memory stays mapped */
    else aligned_free((void *)p); /* from aligned_alloc */
    if (kind == MEM_DEVICE) st.live_allocations--; else st.live_host_allocations--;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
    FAIL_POINT("cuMemFree");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r && dptr) r = free_range(c, (uintptr_t)dptr, MEM_DEVICE); /* freeing 0 is a no-op */
    UNLOCK();
    return r;
}

/* Stream-ordered allocation: the memory is allocated at once (so it is
 * ready for the stream's later work) and freed when the stream reaches the
 * free, with no device-wide fence. Neither call is potentially unsafe. */
static CUresult pool_alloc(CUmemoryPool pool, CUdeviceptr *dptr, size_t size, CUstream h);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream h) {
    FAIL_POINT("cuMemAllocAsync");
    STICKY_POINT();
    return pool_alloc(NULL, dptr, size, h);
}
static int graph_frees(CUgraph g, uintptr_t p);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream h) {
    FAIL_POINT("cuMemFreeAsync");
    STICKY_POINT();
    LOCK();
    CUresult r = initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    CUstream s = NULL;
    if (!r) r = stream_of(h, &s);
    struct gmem *g = r ? NULL : gmem_at((uintptr_t)dptr);
    if (!r && s->cap) {
        /* Captured, a free node: of a graph allocation only (this graph's,
         * or one another graph's launch left allocated), and once in a graph. */
        if (!dptr || !g || graph_frees(s->cap->graph, (uintptr_t)dptr)) r = CUDA_ERROR_INVALID_VALUE;
    } else if (!r && g) {
        /* A graph allocation outside a capture: freeable once a launch
         * allocated it, until a free is submitted. */
        if (!g->outstanding) r = CUDA_ERROR_INVALID_VALUE;
        else g->outstanding = 0;
    } else if (!r && (!dptr || !range_at((uintptr_t)dptr, MEM_DEVICE))) r = CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    if (r) return r;
    struct task t = { .kind = T_FREE, .dst = (void *)(uintptr_t)dptr };
    return enqueue(h, &t);
}
/* The free of cuMemFreeAsync, when the stream reaches it. mu not held. */
static void pool_free(unsigned flags, size_t len);
static void gmem_unmap(struct range *rg);
static void free_async_run(uintptr_t p) {
    LOCK();
    struct range *rg = range_at(p, MEM_DEVICE);
    if (rg && (rg->flags & GRAPH_FLAG)) gmem_unmap(rg);
    else if (rg) {
        unsigned flags = rg->flags;
        size_t len = rg->len;
        int shared = (flags & 0x10000 /* POOL_FLAG */) && pool_shared(flags);
        range_remove(rg);
        if (!shared) free((void *)p);
        pool_free(flags, len);
        st.live_allocations--;
    }
    UNLOCK();
}

/* ----- Memory pools (cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemPool*),
 * as bookkeeping: each pool counts the bytes its allocations use, and the
 * bytes it holds from the device (reserved: what is used, rounded up to
 * 2 MiB chunks, and what frees left until trimmed). A free gives back what
 * the pool holds above its release threshold at once (the driver does it
 * at the next synchronization). A device range allocated from pool i has
 * flags POOL_FLAG | i. mu held unless said. ----- */

enum { POOL_FLAG = 0x10000, MAX_POOLS = 64, POOL_CHUNK = 2 << 20 };
struct CUmemPoolHandle_st {
    int used_slot, dev, own; /* own: 1 made by cuMemPoolCreate, 2 destroyed with allocations left */
    size_t max_size;
    unsigned long long threshold, reserved, reserved_high, used, used_high;
    /* IPC (see "Pool IPC"): an exportable pool's memory is one shared
     * file mapped at base; imported: made from another's handle. */
    int handle_types, fd, imported;
    int exported; /* cuMemPoolExportToShareableHandle has shared it */
    char *base;
    size_t cap, top;
    unsigned long long ipc_id;
    int access[MAX_DEVICES]; /* CUmemAccess_flags of other devices */
};
static struct CUmemPoolHandle_st pools[MAX_POOLS]; /* 0..MAX_DEVICES-1: the default pools */
static CUmemoryPool current_pool[MAX_DEVICES]; /* cuDeviceSetMemPool's; NULL: the default */
static void pool_unmap(CUmemoryPool p);

static CUmemoryPool default_pool(int dev) {
    CUmemoryPool p = &pools[dev];
    if (!p->used_slot) { p->used_slot = 1; p->dev = dev; }
    return p;
}
static int pool_valid(CUmemoryPool p) {
    return p >= pools && p < pools + MAX_POOLS && p->used_slot && (p - pools < MAX_DEVICES || p->own == 1);
}
static void pool_reserve(CUmemoryPool p) {
    unsigned long long need = round_up(p->used, POOL_CHUNK);
    if (need > p->reserved) p->reserved = need;
    if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
}
/* Give back what the pool holds above keep (and above what is used). */
static void pool_release(CUmemoryPool p, unsigned long long keep) {
    if (keep >= p->reserved) return;
    unsigned long long floor = round_up(p->used, POOL_CHUNK);
    keep = round_up(keep < floor ? floor : keep, POOL_CHUNK);
    if (p->reserved > keep) p->reserved = keep;
}
static void pool_free(unsigned flags, size_t len) {
    if (!(flags & POOL_FLAG)) return;
    CUmemoryPool p = &pools[flags & 0xffff];
    p->used -= len;
    pool_release(p, p->threshold);
    if (p->own == 2 && p->used == 0) { pool_unmap(p); p->used_slot = 0; }
}

static CUresult graph_alloc(CUstream s, CUdeviceptr *dptr, size_t size);
static CUresult pool_alloc(CUmemoryPool pool, CUdeviceptr *dptr, size_t size, CUstream h) {
    CUstream s;
    LOCK();
    CUresult r = stream_of(h, &s);
    if (!r && (!dptr || size == 0)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && s->cap) { /* captured: an alloc node */
        r = graph_alloc(s, dptr, size);
        UNLOCK();
        return r;
    }
    if (!r && !pool) pool = current_pool[s->ctx->dev] ? current_pool[s->ctx->dev] : default_pool(s->ctx->dev);
    if (!r && (!pool_valid(pool) || pool->dev != s->ctx->dev || pool->imported)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && (size > TOTAL_MEM || (pool->max_size && pool->used + size > pool->max_size))) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r && pool->base && round_up(pool->top, 256) + size > pool->cap) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        void *p;
        if (pool->base) { /* a bump allocator in the shared file: never reused */
            pool->top = round_up(pool->top, 256);
            p = pool->base + pool->top;
            pool->top += size;
        } else p = aligned_alloc(256, round_up(size, 256));
        if (!p) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            range_add((uintptr_t)p, size, MEM_DEVICE, POOL_FLAG | (unsigned)(pool - pools), s->ctx);
            st.live_allocations++;
            pool->used += size;
            if (pool->used > pool->used_high) pool->used_high = pool->used;
            pool_reserve(pool);
            *dptr = (CUdeviceptr)(uintptr_t)p;
        }
    }
    UNLOCK();
    return r;
}

/* ----- Graph memory: cuMemAllocAsync and cuMemFreeAsync captured into
 * mem-alloc and mem-free nodes (driver semantics as documented for
 * cuGraphAddMemAllocNode, cuGraphAddMemFreeNode and cuGraphLaunch):
 *   - the capture gives the allocation its address at once, fixed for the
 *     life of the node: every launch of every executable graph made from
 *     the graph allocates it at that address (here: the backing memory is
 *     kept while a graph or executable graph holds the node, or while the
 *     allocation is live);
 *   - the device may touch it from when a launch reaches the alloc node
 *     until the free runs (the range is in the table only meanwhile);
 *   - a free node frees a graph allocation only (this graph's, or one that
 *     another graph's launch left allocated); an address freed twice in a
 *     graph, or one no alloc node returned: CUDA_ERROR_INVALID_VALUE;
 *   - an allocation not freed in its graph outlives the launch: the
 *     program frees it (cuMemFreeAsync, cuMemFree, or another graph's free
 *     node); launching its executable graph again before a free was
 *     submitted is CUDA_ERROR_INVALID_VALUE, unless the graph was
 *     instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
 *     (the launch then frees and allocates again, at the same address);
 *   - destroying the graphs does not free a live allocation.
 * Each device's graph memory is bookkeeping like the pools': used is the
 * bytes of live graph allocations, reserved what the device holds for
 * them (used rounded up to 2 MiB chunks, kept after frees until
 * cuDeviceGraphMemTrim), with their high-water marks, which
 * cuDeviceSetGraphMemAttribute resets (to the current value; only 0 may be
 * set). Not modelled: the rule that a graph with memory nodes has one
 * executable graph at a time, and memory nodes in child graphs. mu held
 * unless said. ----- */

static struct gmem *gmems;
static struct { unsigned long long used, used_high, reserved, reserved_high; } gpool[MAX_DEVICES];

static struct gmem *gmem_at(uintptr_t p) {
    for (struct gmem *g = gmems; g; g = g->next)
        if (g->p == p) return g;
    return NULL;
}
/* Free the backing memory of an allocation that nothing holds. */
static void gmem_drop(struct gmem *g) {
    if (g->refs || g->live || g->outstanding) return;
    for (struct gmem **pp = &gmems; *pp; pp = &(*pp)->next)
        if (*pp == g) { *pp = g->next; break; }
    aligned_free((void *)g->p);
    free(g);
    st.live_graph_allocations--;
}
static void gmem_ref(uintptr_t p) {
    struct gmem *g = gmem_at(p);
    if (g) g->refs++;
}
static void gmem_unref(uintptr_t p) {
    struct gmem *g = gmem_at(p);
    if (g) { g->refs--; gmem_drop(g); }
}
/* The captured cuMemAllocAsync: an alloc node at a new address. */
static CUresult graph_alloc(CUstream s, CUdeviceptr *dptr, size_t size) {
    if (size > TOTAL_MEM) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = aligned_alloc(256, round_up(size, 256));
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    struct gmem *g = xcalloc(1, sizeof *g);
    g->p = (uintptr_t)p;
    g->len = size;
    g->ctx = s->ctx;
    g->next = gmems;
    gmems = g;
    st.live_graph_allocations++;
    struct task t = { .kind = T_GALLOC, .dst = p, .n = size };
    CUresult r = record(s, &t);
    if (r) gmem_drop(g);
    else *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}
/* Whether [p, p+len) lies in one graph allocation. */
static int in_graph_mem(uintptr_t p, size_t len) {
    for (struct gmem *g = gmems; g; g = g->next)
        if (p >= g->p && p - g->p <= g->len && len <= g->len - (p - g->p)) return 1;
    return 0;
}
/* Whether graph g frees p already. */
static int graph_frees(CUgraph g, uintptr_t p) {
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->t.kind == T_FREE && (uintptr_t)g->nodes[i]->t.dst == p) return 1;
    return 0;
}
static int prog_frees(const struct prog *x, uintptr_t p) {
    for (int i = 0; i < x->n; i++)
        if (x->nodes[i].t.kind == T_FREE && (uintptr_t)x->nodes[i].t.dst == p) return 1;
    return 0;
}
static void gpool_grow(int dev) {
    unsigned long long need = round_up(gpool[dev].used, POOL_CHUNK);
    if (gpool[dev].used > gpool[dev].used_high) gpool[dev].used_high = gpool[dev].used;
    if (need > gpool[dev].reserved) gpool[dev].reserved = need;
    if (gpool[dev].reserved > gpool[dev].reserved_high) gpool[dev].reserved_high = gpool[dev].reserved;
}
/* An alloc node runs. mu not held. */
static void galloc_run(uintptr_t p) {
    LOCK();
    struct gmem *g = gmem_at(p);
    if (g && !g->live) { /* live already: an AUTO_FREE_ON_LAUNCH relaunch keeps it where it is */
        range_add(p, g->len, MEM_DEVICE, GRAPH_FLAG, g->ctx);
        g->live = 1;
        gpool[g->ctx->dev].used += g->len;
        gpool_grow(g->ctx->dev);
    }
    UNLOCK();
}
/* A free of a live graph allocation runs. */
static void gmem_unmap(struct range *rg) {
    struct gmem *g = gmem_at(rg->start);
    range_remove(rg);
    if (!g) return;
    g->live = 0;
    gpool[g->ctx->dev].used -= g->len;
    gmem_drop(g);
}
/* cuMemFree of p: -1 when p is no graph allocation; else 1 when it was
 * live (and now is not), 0 when it was not. */
static int gmem_free_now(uintptr_t p) {
    struct gmem *g = gmem_at(p);
    if (!g) return -1;
    struct range *rg = range_at(p, MEM_DEVICE);
    if (!rg || !(rg->flags & GRAPH_FLAG)) return 0;
    g->outstanding = 0;
    gmem_unmap(rg);
    return 1;
}
/* cuGraphLaunch's rule for allocations a previous launch left allocated,
 * and its bookkeeping once the launch is submitted. */
static CUresult launch_graph_mem(CUgraphExec x, int submitted) {
    struct prog *pr = x->prog;
    for (int i = 0; i < pr->n; i++) {
        const struct task *t = &pr->nodes[i].t;
        struct gmem *g = t->kind == T_GALLOC || t->kind == T_FREE ? gmem_at((uintptr_t)t->dst) : NULL;
        if (!g) continue;
        int own = t->kind == T_GALLOC && !prog_frees(pr, g->p);
        if (!submitted && own && g->outstanding && !(x->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
            return CUDA_ERROR_INVALID_VALUE;
        if (submitted && own) g->outstanding = 1;
        if (submitted && t->kind == T_FREE) g->outstanding = 0;
    }
    return CUDA_SUCCESS;
}

static CUresult graph_mem_attr(CUdevice dev, int attr, void *value, int set) {
    CUresult r = check_device(dev);
    if (r) return r;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long *v = value;
    LOCK();
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        if (set) r = CUDA_ERROR_INVALID_VALUE;
        else *v = attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT ? gpool[dev].used : gpool[dev].reserved;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        if (!set) *v = gpool[dev].used_high;
        else if (*v) r = CUDA_ERROR_INVALID_VALUE;
        else gpool[dev].used_high = gpool[dev].used;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        if (!set) *v = gpool[dev].reserved_high;
        else if (*v) r = CUDA_ERROR_INVALID_VALUE;
        else gpool[dev].reserved_high = gpool[dev].reserved;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    return r;
}
CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, int attr, void *value) {
    FAIL_POINT("cuDeviceGetGraphMemAttribute");
    return graph_mem_attr(dev, attr, value, 0);
}
CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, int attr, void *value) {
    FAIL_POINT("cuDeviceSetGraphMemAttribute");
    return graph_mem_attr(dev, attr, value, 1);
}
/* Give back what the device holds for graph allocations beyond the live ones. */
CUresult cuDeviceGraphMemTrim(CUdevice dev) {
    FAIL_POINT("cuDeviceGraphMemTrim");
    CUresult r = check_device(dev);
    if (r) return r;
    LOCK();
    gpool[dev].reserved = round_up(gpool[dev].used, POOL_CHUNK);
    st.graph_mem_trims++;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream h) {
    FAIL_POINT("cuMemAllocFromPoolAsync");
    STICKY_POINT();
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(pool, dptr, size, h);
}

static CUresult get_pool(CUmemoryPool *out, CUdevice dev, int current) {
    CUresult r = check_device(dev);
    if (r) return r;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *out = current && current_pool[dev] ? current_pool[dev] : default_pool(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev) {
    FAIL_POINT("cuDeviceGetDefaultMemPool");
    return get_pool(out, dev, 0);
}
CUresult cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev) {
    FAIL_POINT("cuDeviceGetMemPool");
    return get_pool(out, dev, 1);
}
/* The pool that cuMemAllocAsync uses from now on; an imported pool or one
 * of another device is refused. */
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
    FAIL_POINT("cuDeviceSetMemPool");
    CUresult r = check_device(dev);
    if (r) return r;
    LOCK();
    if (!pool_valid(pool) || pool->dev != dev || pool->imported) r = CUDA_ERROR_INVALID_VALUE;
    else current_pool[dev] = pool == &pools[dev] ? NULL : pool;
    UNLOCK();
    return r;
}

static CUresult pool_share(CUmemoryPool p, int handle_types);
CUresult cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props) {
    FAIL_POINT("cuMemPoolCreate");
    if (!out || !props || props->allocType != 1 /* PINNED */ || props->location.type != 1 /* DEVICE */)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_device(props->location.id);
    if (r) return r;
    LOCK();
    r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = MAX_DEVICES; i < MAX_POOLS; i++)
        if (!pools[i].used_slot) {
            pools[i] = (struct CUmemPoolHandle_st){ .used_slot = 1, .own = 1, .dev = props->location.id,
                                                     .max_size = props->maxSize, .fd = -1 };
            r = props->handleTypes ? pool_share(&pools[i], props->handleTypes) : CUDA_SUCCESS;
            if (r) { pools[i].used_slot = 0; break; }
            *out = &pools[i];
            break;
        }
    UNLOCK();
    return r;
}

/* A pool still used is destroyed once its allocations are freed, as the
 * driver does; its slot is kept until then. */
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
    FAIL_POINT("cuMemPoolDestroy");
    LOCK();
    CUresult r = pool_valid(pool) && pool->own == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        for (int d = 0; d < MAX_DEVICES; d++)
            if (current_pool[d] == pool) current_pool[d] = NULL; /* the default is current again */
        if (pool->used == 0) { pool_unmap(pool); pool->used_slot = 0; }
        else pool->own = 2;
    }
    UNLOCK();
    return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
    FAIL_POINT("cuMemPoolTrimTo");
    LOCK();
    CUresult r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!r) { pool_release(pool, keep); st.pool_trims++; st.last_trimmed_pool = (long long)(uintptr_t)pool; }
    UNLOCK();
    return r;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value) {
    FAIL_POINT("cuMemPoolSetAttribute");
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    unsigned long long v = attr >= 4 ? *(unsigned long long *)value : 0;
    if (!r) switch (attr) {
        case 1: case 2: case 3: break; /* the reuse policies: accepted, not modelled */
        case 4: pool->threshold = v; break;
        case 6: /* the high-water marks can only be reset, to 0 */
            if (v) r = CUDA_ERROR_INVALID_VALUE; else pool->reserved_high = pool->reserved;
            break;
        case 8:
            if (v) r = CUDA_ERROR_INVALID_VALUE; else pool->used_high = pool->used;
            break;
        default: r = CUDA_ERROR_INVALID_VALUE;
        }
    UNLOCK();
    return r;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value) {
    FAIL_POINT("cuMemPoolGetAttribute");
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    unsigned long long *v = value;
    if (!r) switch (attr) {
        case 1: case 2: case 3: *(int *)value = 1; break;
        case 4: *v = pool->threshold; break;
        case 5: *v = pool->reserved; break;
        case 6: *v = pool->reserved_high; break;
        case 7: *v = pool->used; break;
        case 8: *v = pool->used_high; break;
        default: r = CUDA_ERROR_INVALID_VALUE;
        }
    UNLOCK();
    return r;
}

/* ----- Pool IPC (cuMemPoolExportToShareableHandle, ...ImportFromShareableHandle,
 * cuMemPoolExportPointer, cuMemPoolImportPointer) and peer access
 * (cuMemPoolSetAccess, cuMemPoolGetAccess). An exportable pool (handle type
 * POSIX file descriptor) keeps its memory in one shared file (memfd) of
 * SIM_POOL_FILE bytes, sparse, mapped at base: its allocations are carved
 * from it by a bump allocator and never reused. The file starts with a
 * header page (a magic word, the pool's id and device); exporting the pool
 * gives a new descriptor of the file, which another process (or this one)
 * maps again to import the pool, so that both see the same bytes, as two
 * processes on one GPU do. A pointer may be exported only once the pool has
 * been (the driver says INVALID_VALUE before). An exported pointer is the pool's id and the
 * allocation's offset and length. Linux only: elsewhere the handle type is
 * not supported. mu held unless said. ----- */

static int pool_shared(unsigned flags) { return pools[flags & 0xffff].base != NULL; }

#ifdef __linux__
enum { SIM_POOL_FILE = 1 << 30, SIM_POOL_HEADER = 4096 };
static const unsigned long long SIM_POOL_MAGIC = 0x6c6f6f7063697370ull; /* "pscipool" */
struct pool_header { unsigned long long magic, id; int dev; };
struct ptr_export { unsigned long long magic, id, offset, len; };
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

static CUresult pool_share(CUmemoryPool p, int handle_types) {
    if (handle_types != 1 /* POSIX_FILE_DESCRIPTOR */) return CUDA_ERROR_NOT_SUPPORTED;
    size_t cap = p->max_size ? round_up(p->max_size, 4096) + SIM_POOL_HEADER : SIM_POOL_FILE;
    int fd = memfd_create("purecuda-sim-pool", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t)cap) != 0) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    void *base = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    static unsigned long long next_id;
    p->ipc_id = ((unsigned long long)getpid() << 32) ^ (unsigned long long)time(NULL) ^ ++next_id << 16;
    *(struct pool_header *)base = (struct pool_header){ SIM_POOL_MAGIC, p->ipc_id, p->dev };
    p->fd = fd;
    p->base = base;
    p->cap = cap;
    p->top = SIM_POOL_HEADER;
    p->handle_types = handle_types;
    return CUDA_SUCCESS;
}

static void pool_unmap(CUmemoryPool p) {
    if (p->base) munmap(p->base, p->cap);
    if (p->fd >= 0) close(p->fd);
    p->base = NULL;
    p->fd = -1;
}

CUresult cuMemPoolExportToShareableHandle(void *out, CUmemoryPool pool, int type, unsigned long long flags) {
    FAIL_POINT("cuMemPoolExportToShareableHandle");
    if (!out || flags) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = pool_valid(pool) && !pool->imported && pool->handle_types == type && type == 1 ? CUDA_SUCCESS
                                                                                                 : CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        int fd = fcntl(pool->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            *(int *)out = fd;
            pool->exported = 1;
        }
    }
    UNLOCK();
    return r;
}

/* The handle is the descriptor itself, passed as a pointer-sized value; it
 * stays the caller's (the mapping keeps the file open). */
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *out, void *handle, int type, unsigned long long flags) {
    FAIL_POINT("cuMemPoolImportFromShareableHandle");
    if (!out || flags || type != 1) return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)(intptr_t)handle;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < SIM_POOL_HEADER) return CUDA_ERROR_INVALID_VALUE;
    void *base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return CUDA_ERROR_INVALID_VALUE;
    struct pool_header h = *(struct pool_header *)base;
    if (h.magic != SIM_POOL_MAGIC || check_device(h.dev)) { munmap(base, (size_t)sb.st_size); return CUDA_ERROR_INVALID_VALUE; }
    LOCK();
    CUresult r = initialised ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_NOT_INITIALIZED;
    for (int i = MAX_DEVICES; r == CUDA_ERROR_OUT_OF_MEMORY && i < MAX_POOLS; i++)
        if (!pools[i].used_slot) {
            pools[i] = (struct CUmemPoolHandle_st){ .used_slot = 1, .own = 1, .dev = h.dev, .fd = -1, .imported = 1,
                                                     .base = base, .cap = (size_t)sb.st_size, .ipc_id = h.id,
                                                     .handle_types = 1 };
            *out = &pools[i];
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    if (r) munmap(base, (size_t)sb.st_size);
    return r;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr) {
    FAIL_POINT("cuMemPoolExportPointer");
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct range *rg = range_at((uintptr_t)ptr, MEM_DEVICE);
    CUmemoryPool p = rg && (rg->flags & POOL_FLAG) ? &pools[rg->flags & 0xffff] : NULL;
    /* As the driver: only the start of an allocation of a pool already
     * shared (exported with cuMemPoolExportToShareableHandle), else
     * CUDA_ERROR_INVALID_VALUE. */
    CUresult r = p && p->base && !p->imported && p->exported && rg->start == (uintptr_t)ptr ? CUDA_SUCCESS
                                                                                          : CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        memset(out, 0, sizeof *out);
        struct ptr_export e = { SIM_POOL_MAGIC, p->ipc_id, (unsigned long long)((char *)(uintptr_t)ptr - p->base), rg->len };
        memcpy(out->reserved, &e, sizeof e);
    }
    UNLOCK();
    return r;
}

/* The memory must not be imported twice into one pool (208, ALREADY_MAPPED). */
CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool, CUmemPoolPtrExportData *data) {
    FAIL_POINT("cuMemPoolImportPointer");
    if (!out || !data) return CUDA_ERROR_INVALID_VALUE;
    struct ptr_export e;
    memcpy(&e, data->reserved, sizeof e);
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    if (!r && (!pool_valid(pool) || !pool->imported || e.magic != SIM_POOL_MAGIC || e.id != pool->ipc_id ||
               e.offset < SIM_POOL_HEADER || e.offset > pool->cap || e.len > pool->cap - e.offset || !e.len))
        r = CUDA_ERROR_INVALID_VALUE;
    uintptr_t p = r ? 0 : (uintptr_t)(pool->base + e.offset);
    if (!r && range_at(p, MEM_DEVICE)) r = 208; /* CUDA_ERROR_ALREADY_MAPPED */
    if (!r) {
        range_add(p, e.len, MEM_DEVICE, POOL_FLAG | (unsigned)(pool - pools), c);
        st.live_allocations++;
        pool->used += e.len;
        *out = (CUdeviceptr)p;
    }
    UNLOCK();
    return r;
}
#else
static CUresult pool_share(CUmemoryPool p, int handle_types) { (void)p; (void)handle_types; return CUDA_ERROR_NOT_SUPPORTED; }
static void pool_unmap(CUmemoryPool p) { (void)p; }
CUresult cuMemPoolExportToShareableHandle(void *out, CUmemoryPool pool, int type, unsigned long long flags) {
    FAIL_POINT("cuMemPoolExportToShareableHandle");
    (void)out; (void)pool; (void)type; (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *out, void *handle, int type, unsigned long long flags) {
    FAIL_POINT("cuMemPoolImportFromShareableHandle");
    (void)out; (void)handle; (void)type; (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr) {
    FAIL_POINT("cuMemPoolExportPointer");
    (void)out; (void)ptr;
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool, CUmemPoolPtrExportData *data) {
    FAIL_POINT("cuMemPoolImportPointer");
    (void)out; (void)pool; (void)data;
    return CUDA_ERROR_INVALID_VALUE;
}
#endif

/* Access of other devices to a pool's memory: none until set; the pool's
 * own device always reads and writes, and cannot be set otherwise. */
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
    FAIL_POINT("cuMemPoolSetAccess");
    if (!map && count) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; !r && i < count; i++) {
        const CUmemAccessDesc *d = &map[i];
        if (d->location.type != 1 /* DEVICE */ || check_device(d->location.id) ||
            (d->flags != 0 && d->flags != 1 && d->flags != 3) || (d->location.id == pool->dev && d->flags != 3))
            r = CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; !r && i < count; i++)
        if (map[i].location.id != pool->dev) pool->access[map[i].location.id] = map[i].flags;
    UNLOCK();
    return r;
}

CUresult cuMemPoolGetAccess(int *flags, CUmemoryPool pool, CUmemLocation *loc) {
    FAIL_POINT("cuMemPoolGetAccess");
    if (!flags || !loc || loc->type != 1 || check_device(loc->id)) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!r) *flags = loc->id == pool->dev ? 3 : pool->access[loc->id];
    UNLOCK();
    return r;
}

/* ----- Managed memory (cuMemAllocManaged, cuMemPrefetchAsync, cuMemAdvise,
 * cuMemRangeGetAttribute), as bookkeeping: the memory is host memory
 * anyway; each managed allocation remembers where it was last prefetched
 * to and the advice it was given, for the allocation as a whole. mu held
 * unless said. ----- */

enum { MANAGED_FLAG = 0x20000, CU_DEVICE_CPU = -1, CU_DEVICE_INVALID = -2 };
struct managed { uintptr_t start; size_t len; int prefetched, preferred, read_mostly; unsigned accessed_by; };
static struct managed *managed;
static int nmanaged, capmanaged;

static struct managed *managed_of(uintptr_t p, size_t n) {
    for (int i = 0; i < nmanaged; i++)
        if (p >= managed[i].start && n <= managed[i].len && p - managed[i].start <= managed[i].len - n) return &managed[i];
    return NULL;
}
static void managed_forget(uintptr_t start) {
    for (int i = 0; i < nmanaged; i++)
        if (managed[i].start == start) { managed[i] = managed[--nmanaged]; return; }
}
/* A location as the range attributes give it: a device ordinal or CU_DEVICE_CPU. */
static int location_of(CUmemLocation loc, int *out) {
    if (loc.type == 1 /* DEVICE */ && check_device(loc.id) == CUDA_SUCCESS) { *out = loc.id; return 1; }
    if (loc.type >= 2 && loc.type <= 4) { *out = CU_DEVICE_CPU; return 1; } /* HOST, HOST_NUMA, HOST_NUMA_CURRENT */
    return 0;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
    FAIL_POINT("cuMemAllocManaged");
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r && (!dptr || size == 0 || (flags != 1 && flags != 2))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && size > TOTAL_MEM) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        void *p = aligned_alloc(4096, round_up(size, 4096));
        if (!p) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            memset(p, 0, size);
            range_add((uintptr_t)p, size, MEM_DEVICE, MANAGED_FLAG, c);
            st.live_allocations++;
            GROW(managed, capmanaged, nmanaged + 1);
            managed[nmanaged++] = (struct managed){ (uintptr_t)p, size, CU_DEVICE_INVALID, CU_DEVICE_INVALID, 0, 0 };
            *dptr = (CUdeviceptr)(uintptr_t)p;
        }
    }
    UNLOCK();
    return r;
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream h) {
    FAIL_POINT("cuMemPrefetchAsync");
    int where;
    if (flags || !location_of(loc, &where)) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct managed *m = managed_of((uintptr_t)p, n);
    if (m) m->prefetched = where;
    UNLOCK();
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    struct task t = { .kind = T_NOP };
    return enqueue(h, &t);
}

/* A stream's claim on managed memory: the whole allocation (length 0),
 * one of CU_MEM_ATTACH_GLOBAL, _HOST or _SINGLE; counted by flag (see
 * sim_stat), in stream order. */
CUresult cuStreamAttachMemAsync(CUstream h, CUdeviceptr p, size_t length, unsigned int flags) {
    FAIL_POINT("cuStreamAttachMemAsync");
    STICKY_POINT();
    if (flags != 1 && flags != 2 && flags != 4) return CUDA_ERROR_INVALID_VALUE;
    CUstream s;
    LOCK();
    CUresult r = stream_of(h, &s);
    struct managed *m = r ? NULL : managed_of((uintptr_t)p, 1);
    if (!r && (!m || m->start != (uintptr_t)p || (length != 0 && length != m->len))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        if (flags == 1) st.attach_global++;
        else if (flags == 2) st.attach_host++;
        else st.attach_single++;
    }
    UNLOCK();
    if (r) return r;
    struct task t = { .kind = T_NOP };
    return enqueue(h, &t);
}

CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation loc) {
    FAIL_POINT("cuMemAdvise");
    int where = CU_DEVICE_INVALID;
    int need_loc = advice >= 3; /* SET/UNSET_PREFERRED_LOCATION, SET/UNSET_ACCESSED_BY */
    if (advice < 1 || advice > 6 || (need_loc && !location_of(loc, &where))) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct managed *m = managed_of((uintptr_t)p, n);
    if (m) switch (advice) {
        case 1: m->read_mostly = 1; break;
        case 2: m->read_mostly = 0; break;
        case 3: m->preferred = where; break;
        case 4: m->preferred = CU_DEVICE_INVALID; break;
        case 5: if (where >= 0) m->accessed_by |= 1u << where; break;
        case 6: if (where >= 0) m->accessed_by &= ~(1u << where); break;
        }
    UNLOCK();
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* As the driver does (measured on the H200), it needs a current context:
 * CUDA_ERROR_INVALID_CONTEXT on a thread that has none. */
CUresult cuMemRangeGetAttribute(void *data, size_t size, int attr, CUdeviceptr p, size_t n) {
    FAIL_POINT("cuMemRangeGetAttribute");
    if (!data || size < 4) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUcontext c;
    struct managed *m = NULL;
    CUresult r = current_ctx(&c);
    if (!r) {
        m = managed_of((uintptr_t)p, n);
        r = m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    int *v = data;
    if (!r) switch (attr) {
        case 1: *v = m->read_mostly; break;
        case 2: *v = m->preferred; break;
        case 3: /* ACCESSED_BY: the devices, then CU_DEVICE_INVALID */
            for (size_t i = 0, k = 0; i < size / 4; i++) {
                while (k < MAX_DEVICES && !(m->accessed_by & (1u << k))) k++;
                v[i] = k < MAX_DEVICES ? (int)k++ : CU_DEVICE_INVALID;
            }
            break;
        case 4: *v = m->prefetched; break;
        default: r = CUDA_ERROR_INVALID_VALUE;
        }
    UNLOCK();
    return r;
}

static CUresult host_alloc(void **pp, size_t size, unsigned flags) {
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r && (!pp || flags > 7)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        void *p = aligned_alloc(4096, round_up(size ? size : 1, 4096));
        if (!p) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            range_add((uintptr_t)p, size, MEM_HOSTALLOC, flags, c);
            st.live_host_allocations++;
            *pp = p;
        }
    }
    UNLOCK();
    return r;
}
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags) {
    FAIL_POINT("cuMemHostAlloc");
    STICKY_POINT();
    return host_alloc(pp, size, flags);
}
CUresult cuMemAllocHost_v2(void **pp, size_t size) {
    FAIL_POINT("cuMemAllocHost");
    STICKY_POINT();
    return host_alloc(pp, size, 0);
}

CUresult cuMemFreeHost(void *p) {
    FAIL_POINT("cuMemFreeHost");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r) r = free_range(c, (uintptr_t)p, MEM_HOSTALLOC);
    UNLOCK();
    return r;
}

/* Registration works on byte ranges: any overlap with a registered range is
 * refused with 712 (with pinned memory, 1); ranges that merely share a page
 * are fine. */
static CUresult host_register(void *p, size_t size, unsigned flags) {
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r && (!p || size == 0 || flags > 0xf)) r = CUDA_ERROR_INVALID_VALUE;
    int overlap = r ? 0 : host_overlap((uintptr_t)p, size);
    if (overlap) r = overlap == MEM_HOSTALLOC ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (!r) {
        range_add((uintptr_t)p, size, MEM_REGISTERED, flags, c);
        st.registered_ranges++;
        st.registered_bytes += (long long)size;
    }
    UNLOCK();
    return r;
}
/* Counts a call of register or unregister, injected failures included. */
static void count_call(long long *counter) {
    LOCK();
    (*counter)++;
    UNLOCK();
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags) {
    count_call(&st.register_calls);
    FAIL_POINT("cuMemHostRegister");
    STICKY_POINT();
    return host_register(p, size, flags);
}
CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags) { /* the 4.0 ABI; same behaviour here */
    count_call(&st.register_calls);
    FAIL_POINT("cuMemHostRegister");
    STICKY_POINT();
    return host_register(p, size, flags);
}

CUresult cuMemHostUnregister(void *p) {
    count_call(&st.unregister_calls);
    FAIL_POINT("cuMemHostUnregister");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = unsafe_prologue(&c);
    if (!r) {
        struct range *rg = range_containing((uintptr_t)p);
        if (!p || (rg && rg->kind == MEM_HOSTALLOC)) r = CUDA_ERROR_INVALID_VALUE;
        else if (!rg || rg->kind != MEM_REGISTERED) r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
        else if (rg->start != (uintptr_t)p) r = CUDA_ERROR_INVALID_VALUE;
    }
    if (!r) {
        fence_device(c->dev);
        struct range *rg = range_at((uintptr_t)p, MEM_REGISTERED);
        if (!rg) r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
        else {
            st.registered_ranges--;
            st.registered_bytes -= (long long)rg->len;
            range_remove(rg);
        }
    }
    UNLOCK();
    return r;
}

/* The registered or pinned range holding p, for the pointer queries. mu held. */
static struct range *host_range(void *p) {
    struct range *rg = range_containing((uintptr_t)p);
    return rg && rg->kind != MEM_DEVICE ? rg : NULL;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags) {
    FAIL_POINT("cuMemHostGetDevicePointer");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    if (!r && (!pdptr || flags != 0 || !host_range(p))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *pdptr = (CUdeviceptr)(uintptr_t)p;
    UNLOCK();
    return r;
}

CUresult cuMemHostGetFlags(unsigned int *pflags, void *p) {
    FAIL_POINT("cuMemHostGetFlags");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    struct range *rg = r ? NULL : host_range(p);
    if (!r && (!pflags || !rg)) r = CUDA_ERROR_INVALID_VALUE;
    /* the driver adds DEVICEMAP (all host memory is mapped); for registered
     * memory it drops the register-only flags (READ_ONLY, IOMEMORY) */
    if (!r) *pflags = 2 | (rg->kind == MEM_HOSTALLOC ? rg->flags : rg->flags & 1);
    UNLOCK();
    return r;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr) {
    FAIL_POINT("cuPointerGetAttribute");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    struct range *rg = range_containing((uintptr_t)ptr);
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!data || !rg) r = CUDA_ERROR_INVALID_VALUE;
    else switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = rg->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = rg->kind == MEM_DEVICE ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (rg->kind == MEM_DEVICE) r = CUDA_ERROR_INVALID_VALUE;
        else *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = rg->ctx->dev; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)rg->start; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = rg->len; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    return r;
}

/* ----- copies and memsets ----- */

static struct task copy_task(uintptr_t dst, uintptr_t src, size_t n, int dev_dst, int dev_src) {
    return (struct task){ .kind = T_COPY, .dst = (void *)dst, .src = (const void *)src, .n = n,
                          .dev_dst = dev_dst, .dev_src = dev_src };
}
static struct task set_task(CUdeviceptr dst, unsigned value, size_t n, unsigned width) {
    return (struct task){ .kind = T_SET, .dst = (void *)(uintptr_t)dst, .value = value, .n = n, .width = width };
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    FAIL_POINT("cuMemcpy");
    STICKY_POINT();
    struct task t = copy_task(dst, src, n, 0, 0);
    return run_sync(&t);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    FAIL_POINT("cuMemcpyHtoD");
    STICKY_POINT();
    struct task t = copy_task(dst, (uintptr_t)src, n, 1, 0);
    return run_sync(&t);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    FAIL_POINT("cuMemcpyDtoH");
    STICKY_POINT();
    struct task t = copy_task((uintptr_t)dst, src, n, 0, 1);
    return run_sync(&t);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    FAIL_POINT("cuMemcpyDtoD");
    STICKY_POINT();
    struct task t = copy_task(dst, src, n, 1, 1);
    return run_sync(&t);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
    FAIL_POINT("cuMemcpyAsync");
    STICKY_POINT();
    struct task t = copy_task(dst, src, n, 0, 0);
    return enqueue(h, &t);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h) {
    FAIL_POINT("cuMemcpyHtoDAsync");
    STICKY_POINT();
    struct task t = copy_task(dst, (uintptr_t)src, n, 1, 0);
    return enqueue(h, &t);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h) {
    FAIL_POINT("cuMemcpyDtoHAsync");
    STICKY_POINT();
    struct task t = copy_task((uintptr_t)dst, src, n, 0, 1);
    return enqueue(h, &t);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
    FAIL_POINT("cuMemcpyDtoDAsync");
    STICKY_POINT();
    struct task t = copy_task(dst, src, n, 1, 1);
    return enqueue(h, &t);
}
/* Peer copies: device memory is host memory here, so they are device to
 * device copies once both contexts are known to be valid. */
static CUresult peer_contexts(CUcontext a, CUcontext b) {
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    if (!a || a->magic != MAGIC_CTX || !b || b->magic != MAGIC_CTX) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
    FAIL_POINT("cuMemcpyPeer");
    STICKY_POINT();
    CUresult r = peer_contexts(dctx, sctx);
    if (r) return r;
    struct task t = copy_task(dst, src, n, 1, 1);
    return run_sync(&t);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream h) {
    FAIL_POINT("cuMemcpyPeerAsync");
    STICKY_POINT();
    CUresult r = peer_contexts(dctx, sctx);
    if (r) return r;
    struct task t = copy_task(dst, src, n, 1, 1);
    return enqueue(h, &t);
}

/* ----- device identity, peer access and 2D copies (package cuda's Device.UUID,
 * PCIBusID, CanAccessPeer, Context.EnablePeerAccess, Copy2D) ----- */

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    FAIL_POINT("cuDeviceGetUuid");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    static const unsigned char base[16] = { 0x5e, 0x1a, 0x7e, 0xd0, 0x48, 0x20, 0x4c, 0x0d,
                                            0x9a, 0x3b, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00 };
    memcpy(uuid->bytes, base, 16);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

/* "dddd:bb:dd.f", from the PCI attributes above. */
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev) {
    FAIL_POINT("cuDeviceGetPCIBusId");
    CUresult r = check_device(dev);
    if (r) return r;
    if (!id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "%04x:%02x:%02x.0", 0, 0x19 + 0x10 * dev, 0);
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
    FAIL_POINT("cuDeviceCanAccessPeer");
    CUresult r = check_device(dev);
    if (!r) r = check_device(peer);
    if (r) return r;
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}

/* Peer access enabled, from the current context to another: a short table
 * (two devices). mu held. */
static struct { CUcontext from, to; } peers[16];
static int npeers;

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
    FAIL_POINT("cuCtxEnablePeerAccess");
    CUcontext c;
    LOCK();
    CUresult r = current_ctx(&c);
    if (!r && flags) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && (!peer || peer->magic != MAGIC_CTX || peer->destroyed)) r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r && peer->dev == c->dev) r = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    for (int i = 0; !r && i < npeers; i++)
        if (peers[i].from == c && peers[i].to == peer) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (!r && npeers == (int)(sizeof peers / sizeof peers[0])) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) { peers[npeers].from = c; peers[npeers++].to = peer; }
    UNLOCK();
    return r;
}

/* One side of a 2D copy: its start address, and whether it is device memory. */
static CUresult copy2d_side(int type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t pitch,
                            uintptr_t *p, int *device) {
    switch (type) {
    case CU_MEMORYTYPE_HOST: *p = (uintptr_t)host; *device = 0; break;
    case CU_MEMORYTYPE_DEVICE: case CU_MEMORYTYPE_UNIFIED: *p = (uintptr_t)dev; *device = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE; /* no arrays here */
    }
    if (!*p) return CUDA_ERROR_INVALID_VALUE;
    *p += y * pitch + x;
    return CUDA_SUCCESS;
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream h) {
    FAIL_POINT("cuMemcpy2DAsync");
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    if (!c->WidthInBytes || !c->Height) return CUDA_SUCCESS;
    if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t src, dst;
    int dsrc, ddst;
    CUresult r = copy2d_side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch, &src, &dsrc);
    if (!r) r = copy2d_side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch, &dst, &ddst);
    if (r) return r;
    struct task t = copy_task(dst, src, c->WidthInBytes, ddst, dsrc);
    t.height = c->Height;
    t.dpitch = c->dstPitch;
    t.spitch = c->srcPitch;
    return enqueue(h, &t);
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
    FAIL_POINT("cuMemsetD8");
    STICKY_POINT();
    struct task t = set_task(dst, value, n, 1);
    return run_sync(&t);
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n) {
    FAIL_POINT("cuMemsetD32");
    STICKY_POINT();
    if (dst % 4) return CUDA_ERROR_INVALID_VALUE;
    struct task t = set_task(dst, value, n, 4);
    return run_sync(&t);
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream h) {
    FAIL_POINT("cuMemsetD8Async");
    STICKY_POINT();
    struct task t = set_task(dst, value, n, 1);
    return enqueue(h, &t);
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream h) {
    FAIL_POINT("cuMemsetD16Async");
    STICKY_POINT();
    if (dst % 2) return CUDA_ERROR_INVALID_VALUE;
    struct task t = set_task(dst, value, n, 2);
    return enqueue(h, &t);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream h) {
    FAIL_POINT("cuMemsetD32Async");
    STICKY_POINT();
    if (dst % 4) return CUDA_ERROR_INVALID_VALUE;
    struct task t = set_task(dst, value, n, 4);
    return enqueue(h, &t);
}

/* ===================================================================
 * API: modules and launches
 * A module remembers which test kernels its image declares (".entry NAME"
 * in PTX text); other entries are ignored.
 * =================================================================== */

/* A module's functions fill funcs[] in the order the image declares them:
 * when a module's struct serves again after an unload, a function of the
 * new module gets the handle of one of the old, whatever its kernel, as
 * the driver reuses handles. */
struct CUfunc_st {
    unsigned magic; int kernel;
    struct CUmod_st *mod;
    int attr[16]; /* CU_FUNC_ATTRIBUTE_* 8..15 as cuFuncSetAttribute left them (func_init) */
};
static struct CUfunc_st func_init(int k);
/* A module's globals: the .global and .const variables its PTX declares,
 * each in device memory of its own, freed at unload. */
enum { MAX_GLOBALS = 8 };
struct global { char name[64]; size_t size; void *p; };
struct CUmod_st {
    unsigned magic; struct CUfunc_st funcs[K_COUNT];
    struct global globals[MAX_GLOBALS]; int nglobals;
};

/* Read the variables a PTX image declares: ".visible .const .align 4 .f32 bias;",
 * ".global .align 4 .b8 table[64];" (a state space, then type and name, an
 * array length maybe). mu held. */
static void module_globals(CUmodule m, const char *image, CUcontext c) {
    for (const char *p = image; *p && m->nglobals < MAX_GLOBALS; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        const char *line = p, *end = strchr(p, ';'), *nl = strchr(p, '\n');
        while (*line == ' ' || *line == '\t') line++;
        if (strncmp(line, ".visible ", 9) == 0) line += 9;
        if (strncmp(line, ".global ", 8) != 0 && strncmp(line, ".const ", 7) != 0) continue;
        if (!end || (nl && nl < end)) continue;
        /* The last word before ';' is the name; the word before it the type. */
        const char *q = end;
        while (q > line && q[-1] != ' ' && q[-1] != '\t') q--;
        const char *t = q - 1;
        while (t > line && (t[-1] != ' ' && t[-1] != '\t')) t--;
        size_t elem = strncmp(t, ".b8", 3) == 0 || strncmp(t, ".u8", 3) == 0 || strncmp(t, ".s8", 3) == 0 ? 1
                    : strncmp(t + 2, "16", 2) == 0 ? 2 : strncmp(t + 2, "64", 2) == 0 ? 8 : 4;
        size_t nlen = strcspn(q, "[;"), count = 1;
        if (q[nlen] == '[') count = strtoull(q + nlen + 1, NULL, 10);
        struct global *g = &m->globals[m->nglobals];
        if (nlen == 0 || nlen >= sizeof g->name || count == 0) continue;
        memcpy(g->name, q, nlen);
        g->name[nlen] = 0;
        g->size = elem * count;
        g->p = aligned_alloc(256, round_up(g->size, 256));
        memset(g->p, 0, g->size);
        range_add((uintptr_t)g->p, g->size, MEM_DEVICE, 0, c);
        m->nglobals++;
    }
}
static void module_free_globals(CUmodule m) { /* mu held */
    for (int i = 0; i < m->nglobals; i++) {
        struct range *rg = range_at((uintptr_t)m->globals[i].p, MEM_DEVICE);
        if (rg) range_remove(rg);
        aligned_free(m->globals[i].p);
    }
    m->nglobals = 0;
}
static const struct global *module_global(CUmodule m, const char *name) {
    for (int i = 0; i < m->nglobals; i++)
        if (strcmp(m->globals[i].name, name) == 0) return &m->globals[i];
    return NULL;
}

static CUresult module_load(CUmodule *pm, const void *image) {
    CUcontext c;
    if (!pm || !image) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    gate();
    CUresult r = current_ctx(&c);
    const unsigned char *b = image;
    int binary = (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') ||
                 (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba); /* cubin or fatbin */
    if (!r && !binary && !strstr(image, ".version")) r = CUDA_ERROR_INVALID_IMAGE;
    if (!r) {
        CUmodule m = handle_alloc(&free_modules, sizeof *m);
        m->magic = MAGIC_MODULE;
        for (const char *p = binary ? "" : image; (p = strstr(p, ".entry")) != NULL;) {
            p += 6;
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            size_t len = strcspn(p, " \t\r\n(");
            for (int k = 0; k < K_COUNT; k++)
                if (strlen(kernels[k].name) == len && strncmp(p, kernels[k].name, len) == 0) {
                    int nf = 0, dup = 0;
                    for (; nf < K_COUNT && m->funcs[nf].magic; nf++) dup |= m->funcs[nf].kernel == k;
                    if (!dup && nf < K_COUNT) {
                        m->funcs[nf] = func_init(k);
                        m->funcs[nf].mod = m;
                    }
                }
        }
        if (!binary) module_globals(m, image, c);
        *pm = m;
        st.live_modules++;
    }
    UNLOCK();
    return r;
}
CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
    FAIL_POINT("cuModuleLoadData");
    STICKY_POINT();
    return module_load(pm, image);
}
/* What the simulator's "JIT" finds wrong in PTX text: no .target, or
 * braces that do not balance (the bad PTX of the tests: a function left
 * open). NULL when it finds nothing. */
static const char *ptx_problem(const char *image, int *line) {
    int depth = 0;
    *line = 1;
    if (!strstr(image, ".target")) return "no .target directive";
    for (const char *p = image; *p; p++) {
        if (*p == '\n') ++*line;
        else if (*p == '{') depth++;
        else if (*p == '}' && --depth < 0) return "'}' without '{'";
    }
    return depth ? "unexpected end of file: a '{' is not closed" : NULL;
}

/* JIT options: the logs (3/4 info, 5/6 errors: a buffer and its size,
 * which comes back as the bytes written) are filled; the other known
 * options (0-34) are accepted and do nothing; an unknown one is
 * CUDA_ERROR_INVALID_VALUE. Bad PTX text gives CUDA_ERROR_INVALID_PTX and
 * a line in the error log. */
struct jit_logs { char *info, *err; size_t info_n, err_n; int info_i, err_i; };
static CUresult jit_options(unsigned nopts, const CUjit_option *opts, void **vals, struct jit_logs *l) {
    *l = (struct jit_logs){ .info_i = -1, .err_i = -1 };
    if (nopts && (!opts || !vals)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < nopts; i++) switch (opts[i]) {
        case 3: l->info = vals[i]; break;
        case 4: l->info_n = (size_t)(uintptr_t)vals[i]; l->info_i = (int)i; break;
        case 5: l->err = vals[i]; break;
        case 6: l->err_n = (size_t)(uintptr_t)vals[i]; l->err_i = (int)i; break;
        default: if (opts[i] < 0 || opts[i] > 34) return CUDA_ERROR_INVALID_VALUE; break;
        }
    return CUDA_SUCCESS;
}
static void jit_log(const struct jit_logs *l, void **vals, const char *msg) {
    if (l->err_i >= 0) vals[l->err_i] = 0;
    if (l->info_i >= 0) vals[l->info_i] = 0;
    if (msg && l->err && l->err_n) {
        snprintf(l->err, l->err_n, "%s", msg);
        if (l->err_i >= 0) vals[l->err_i] = (void *)(uintptr_t)(strlen(l->err) + 1);
    }
}
static CUresult jit_check(const void *image, const struct jit_logs *l, void **vals) {
    const unsigned char *b = image;
    int binary = (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') || (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba);
    int line = 0;
    const char *why = binary || !strstr(image, ".version") ? NULL : ptx_problem(image, &line);
    if (!why) {
        jit_log(l, vals, NULL);
        return CUDA_SUCCESS;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "purecuda sim ptxas, line %d; error   : %s", line, why);
    jit_log(l, vals, msg);
    return CUDA_ERROR_INVALID_PTX;
}

CUresult cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned int nopts, CUjit_option *opts, void **vals) {
    FAIL_POINT("cuModuleLoadDataEx");
    STICKY_POINT();
    struct jit_logs l;
    CUresult r = jit_options(nopts, opts, vals, &l);
    if (!r && (!pm || !image)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) r = jit_check(image, &l, vals);
    return r ? r : module_load(pm, image);
}

/* Libraries (cuLibraryLoadData): the image, kept, and the module of it
 * in each context that asked (cuLibraryGetModule, loaded on first ask);
 * cuLibraryUnload unloads those. A binary image keeps only its first
 * bytes, all that module_load reads of one. */
typedef struct CUlib_st *CUlibrary;
enum { MAGIC_LIBRARY = 0x11b7a77e, LIB_MODULES = 8 };
struct CUlib_st { unsigned magic; char *image; struct { CUcontext ctx; CUmodule m; } mods[LIB_MODULES]; int nmods; };
static struct freelist free_libraries;
static CUresult module_load(CUmodule *pm, const void *image);
CUresult cuLibraryLoadData(CUlibrary *out, const void *code, CUjit_option *opts, void **vals, unsigned int nopts,
                           int *libopts, void **libvals, unsigned int nlibopts) {
    FAIL_POINT("cuLibraryLoadData");
    STICKY_POINT();
    (void)libopts; (void)libvals;
    struct jit_logs l;
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = jit_options(nopts, opts, vals, &l);
    if (!r && (!out || !code || (nlibopts && (!libopts || !libvals)))) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) r = jit_check(code, &l, vals);
    if (r) return r;
    const unsigned char *b = code;
    int binary = (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') || (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba);
    if (!binary && !strstr(code, ".version")) return CUDA_ERROR_INVALID_IMAGE;
    size_t n = binary ? 16 : strlen(code) + 1;
    LOCK();
    CUlibrary lib = handle_alloc(&free_libraries, sizeof *lib);
    UNLOCK();
    lib->image = xcalloc(1, n);
    memcpy(lib->image, code, n);
    lib->magic = MAGIC_LIBRARY;
    *out = lib;
    return CUDA_SUCCESS;
}
CUresult cuLibraryGetModule(CUmodule *pm, CUlibrary lib) {
    FAIL_POINT("cuLibraryGetModule");
    CUcontext c;
    if (!lib || lib->magic != MAGIC_LIBRARY) return CUDA_ERROR_INVALID_HANDLE;
    if (!pm) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = current_ctx(&c);
    for (int i = 0; !r && i < lib->nmods; i++)
        if (lib->mods[i].ctx == c) { *pm = lib->mods[i].m; UNLOCK(); return CUDA_SUCCESS; }
    if (!r && lib->nmods == LIB_MODULES) r = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    if (r) return r;
    CUmodule m;
    r = module_load(&m, lib->image);
    if (r) return r;
    LOCK();
    lib->mods[lib->nmods].ctx = c;
    lib->mods[lib->nmods].m = m;
    lib->nmods++;
    UNLOCK();
    *pm = m;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m);
CUresult cuLibraryUnload(CUlibrary lib) {
    FAIL_POINT("cuLibraryUnload");
    if (!lib || lib->magic != MAGIC_LIBRARY) return CUDA_ERROR_INVALID_HANDLE;
    lib->magic = 0;
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < lib->nmods; i++) {
        CUresult u = cuModuleUnload(lib->mods[i].m);
        if (!r) r = u;
    }
    lib->nmods = 0;
    free(lib->image);
    lib->image = NULL;
    LOCK();
    handle_free(&free_libraries, lib);
    UNLOCK();
    return r;
}

/* The driver's linker: a link state gathers the inputs; its image is the
 * PTX inputs one after another (a text image module_load reads; cubins and
 * fat binaries add nothing the simulator could run). Bad PTX is refused
 * by cuLinkAddData, with the line in the error log given to cuLinkCreate.
 * The image belongs to the state until cuLinkDestroy. */
typedef struct CUlinkState_st *CUlinkState;
struct CUlinkState_st { unsigned magic; struct jit_logs logs; void **vals; char *image; size_t len; int inputs; };
enum { MAGIC_LINK = 0x11a4c0de };
static struct freelist free_links;
CUresult cuLinkCreate_v2(unsigned int nopts, CUjit_option *opts, void **vals, CUlinkState *out) {
    FAIL_POINT("cuLinkCreate");
    CUcontext c;
    struct jit_logs l;
    CUresult r = jit_options(nopts, opts, vals, &l);
    if (!r && !out) r = CUDA_ERROR_INVALID_VALUE;
    if (r) return r;
    LOCK();
    r = current_ctx(&c);
    UNLOCK();
    if (r) return r;
    LOCK();
    CUlinkState ls = handle_alloc(&free_links, sizeof *ls);
    ls->magic = MAGIC_LINK;
    st.live_link_states++;
    UNLOCK();
    ls->logs = l;
    ls->vals = vals;
    jit_log(&l, vals, NULL);
    *out = ls;
    return CUDA_SUCCESS;
}
CUresult cuLinkAddData_v2(CUlinkState ls, int type, void *data, size_t size, const char *name, unsigned int nopts,
                          CUjit_option *opts, void **vals) {
    FAIL_POINT("cuLinkAddData");
    (void)name;
    struct jit_logs ignored;
    if (!ls || ls->magic != MAGIC_LINK) return CUDA_ERROR_INVALID_HANDLE;
    if (!data || !size || type < 0 || type > 4) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = jit_options(nopts, opts, vals, &ignored);
    if (r) return r;
    /* PTX is read as a C string: its NUL must lie within size, or the
     * driver would read past the caller's buffer. */
    if (type == 1 && ((const char *)data)[size - 1] != 0) return CUDA_ERROR_INVALID_VALUE;
    ls->inputs++;
    if (type != 1) return CUDA_SUCCESS; /* CU_JIT_INPUT_PTX */
    char *text = xcalloc(1, size + 1);
    memcpy(text, data, size);
    r = jit_check(text, &ls->logs, ls->vals);
    if (!r) {
        size_t n = strlen(text);
        ls->image = xrealloc(ls->image, ls->len + n + 2);
        memcpy(ls->image + ls->len, text, n);
        ls->len += n;
        ls->image[ls->len++] = '\n';
        ls->image[ls->len] = 0;
    }
    free(text);
    return r;
}
CUresult cuLinkComplete(CUlinkState ls, void **cubin, size_t *size) {
    FAIL_POINT("cuLinkComplete");
    if (!ls || ls->magic != MAGIC_LINK) return CUDA_ERROR_INVALID_HANDLE;
    if (!cubin || !size) return CUDA_ERROR_INVALID_VALUE;
    if (!ls->inputs) return CUDA_ERROR_INVALID_VALUE;
    if (!ls->image) { ls->image = xcalloc(1, 64); snprintf(ls->image, 64, ".version 8.0\n.target sm_90\n"); ls->len = strlen(ls->image); }
    *cubin = ls->image;
    *size = ls->len + 1;
    return CUDA_SUCCESS;
}
CUresult cuLinkDestroy(CUlinkState ls) {
    FAIL_POINT("cuLinkDestroy");
    if (!ls || ls->magic != MAGIC_LINK) return CUDA_ERROR_INVALID_HANDLE;
    ls->magic = 0;
    /* The image goes with the state: spoil it first, so that a caller
     * that kept the pointer instead of copying reads garbage. */
    if (ls->image) memset(ls->image, 0x5a, ls->len);
    free(ls->image);
    ls->image = NULL;
    LOCK();
    st.live_link_states--;
    handle_free(&free_links, ls);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
    FAIL_POINT("cuModuleUnload");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    gate();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!m || m->magic != MAGIC_MODULE) r = CUDA_ERROR_INVALID_HANDLE;
    else {
        m->magic = 0;
        for (int k = 0; k < K_COUNT; k++) m->funcs[k].magic = 0;
        module_free_globals(m);
        st.live_modules--;
        handle_free(&free_modules, m);
    }
    UNLOCK();
    return r;
}

CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
    FAIL_POINT("cuModuleGetFunction");
    STICKY_POINT();
    CUresult r = CUDA_ERROR_NOT_FOUND;
    LOCK();
    gate();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!m || m->magic != MAGIC_MODULE) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!pf || !name) r = CUDA_ERROR_INVALID_VALUE;
    else for (int k = 0; k < K_COUNT; k++)
        if (m->funcs[k].magic == MAGIC_FUNC && strcmp(kernels[m->funcs[k].kernel].name, name) == 0) {
            *pf = &m->funcs[k];
            r = CUDA_SUCCESS;
        }
    UNLOCK();
    return r;
}

/* A global's device address and size; CUDA_ERROR_NOT_FOUND for a name the
 * module does not declare. Either result pointer may be NULL. */
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
    FAIL_POINT("cuModuleGetGlobal");
    CUresult r = CUDA_ERROR_NOT_FOUND;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!m || m->magic != MAGIC_MODULE) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!name) r = CUDA_ERROR_INVALID_VALUE;
    else {
        const struct global *g = module_global(m, name);
        if (g) {
            if (dptr) *dptr = (CUdeviceptr)(uintptr_t)g->p;
            if (bytes) *bytes = g->size;
            r = CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return r;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule m) {
    FAIL_POINT("cuModuleGetFunctionCount");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!m || m->magic != MAGIC_MODULE) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!count) r = CUDA_ERROR_INVALID_VALUE;
    else {
        *count = 0;
        for (int k = 0; k < K_COUNT; k++) *count += m->funcs[k].magic == MAGIC_FUNC;
    }
    UNLOCK();
    return r;
}

CUresult cuModuleEnumerateFunctions(CUfunction *fns, unsigned int n, CUmodule m) {
    FAIL_POINT("cuModuleEnumerateFunctions");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!m || m->magic != MAGIC_MODULE) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!fns) r = CUDA_ERROR_INVALID_VALUE;
    else {
        unsigned i = 0;
        for (int k = 0; k < K_COUNT; k++)
            if (m->funcs[k].magic == MAGIC_FUNC) {
                if (i == n) { r = CUDA_ERROR_INVALID_VALUE; break; }
                fns[i++] = &m->funcs[k];
            }
    }
    UNLOCK();
    return r;
}

CUresult cuFuncGetName(const char **name, CUfunction f) {
    FAIL_POINT("cuFuncGetName");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!name) r = CUDA_ERROR_INVALID_VALUE;
    else *name = kernels[f->kernel].name;
    UNLOCK();
    return r;
}

/* Function attributes and occupancy, an H200's rules reduced to what the
 * test kernels need: every test kernel takes blocks of up to 1024 threads
 * and uses no registers that limit it; its static shared memory is its
 * row's; dynamic shared memory is limited to 48 KiB less the static until
 * cuFuncSetAttribute raises MAX_DYNAMIC_SHARED_SIZE_BYTES, at most to the
 * opt-in limit (227 KiB) less the static. A multiprocessor holds 2048
 * threads, 32 blocks and 228 KiB of shared memory, of which each block
 * also takes 1 KiB reserved. Attributes 0-7 and 10 read-only. */
enum { SM_THREADS = 2048, SM_BLOCKS = 32, SM_SMEM = 233472, SMEM_OPTIN = 232448, SMEM_RESERVED = 1024, SMS = 132 };

static struct CUfunc_st func_init(int k) {
    struct CUfunc_st f = { .magic = MAGIC_FUNC, .kernel = k };
    f.attr[8] = 49152 - kernels[k].static_smem; /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    f.attr[9] = -1;                              /* PREFERRED_SHARED_MEMORY_CARVEOUT: no preference */
    return f;
}

CUresult cuFuncGetAttribute(int *v, int attrib, CUfunction f) {
    FAIL_POINT("cuFuncGetAttribute");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!v || attrib < 0 || attrib > 15) r = CUDA_ERROR_INVALID_VALUE;
    else switch (attrib) {
        case 0: *v = 1024; break;                                  /* MAX_THREADS_PER_BLOCK */
        case 1: *v = kernels[f->kernel].static_smem; break;        /* SHARED_SIZE_BYTES */
        case 5: case 6: *v = 90; break;                            /* PTX_VERSION, BINARY_VERSION */
        default: *v = attrib >= 8 ? f->attr[attrib] : 0; break;
        }
    UNLOCK();
    return r;
}

CUresult cuFuncSetAttribute(CUfunction f, int attrib, int value) {
    FAIL_POINT("cuFuncSetAttribute");
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else {
        int ok;
        switch (attrib) {
        case 8: ok = value >= 0 && value <= SMEM_OPTIN - kernels[f->kernel].static_smem; break;
        case 9: ok = value >= -1 && value <= 100; break;
        case 11: case 12: case 13: ok = value >= 0 && value <= 16; break;
        case 14: ok = value == 0 || value == 1; break;
        case 15: ok = value >= 0 && value <= 2; break;
        default: ok = 0; break; /* read-only or unknown */
        }
        if (!ok) r = CUDA_ERROR_INVALID_VALUE;
        else f->attr[attrib] = value;
    }
    UNLOCK();
    return r;
}

/* Blocks of bs threads with dyn bytes of dynamic shared memory that fit
 * on one multiprocessor. mu held. */
static int blocks_per_sm(const struct CUfunc_st *f, int bs, size_t dyn) {
    if (bs > 1024 || dyn > (size_t)f->attr[8]) return 0;
    int threads = (bs + 31) / 32 * 32;
    int n = SM_THREADS / threads;
    if (n > SM_BLOCKS) n = SM_BLOCKS;
    size_t smem = dyn + (size_t)kernels[f->kernel].static_smem + SMEM_RESERVED;
    if ((size_t)n * smem > SM_SMEM) n = (int)(SM_SMEM / smem);
    return n;
}

static CUresult occupancy(int *n, CUfunction f, int bs, size_t dyn) {
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!n || bs <= 0) r = CUDA_ERROR_INVALID_VALUE;
    else *n = blocks_per_sm(f, bs, dyn);
    UNLOCK();
    return r;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int bs, size_t dyn) {
    FAIL_POINT("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    return occupancy(n, f, bs, dyn);
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f, int bs, size_t dyn, unsigned flags) {
    FAIL_POINT("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    return occupancy(n, f, bs, dyn);
}

/* The most dynamic shared memory a block of bs threads may have so that
 * n blocks fit on one multiprocessor: the multiprocessor's shared memory
 * shared among them, less each block's static and reserved parts, at most
 * what a block may opt in to; 0 when n blocks of bs threads never fit. */
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *out, CUfunction f, int n, int bs) {
    FAIL_POINT("cuOccupancyAvailableDynamicSMemPerBlock");
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!out || n <= 0 || bs <= 0) r = CUDA_ERROR_INVALID_VALUE;
    else {
        size_t fixed = (size_t)kernels[f->kernel].static_smem + SMEM_RESERVED;
        size_t each = SM_SMEM / (size_t)n;
        if (blocks_per_sm(f, bs, 0) < n || each <= fixed) *out = 0;
        else {
            size_t v = each - fixed, cap = SMEM_OPTIN - (size_t)kernels[f->kernel].static_smem;
            *out = v < cap ? v : cap;
        }
    }
    UNLOCK();
    return r;
}

/* The block size with the most resident threads: each size from the
 * limit down, a warp at a time, the first best kept (as the CUDA
 * runtime's cudaOccupancyMaxPotentialBlockSize does). */
typedef size_t (*CUoccupancyB2DSize)(int blockSize);
static CUresult potential_block_size(int *grid, int *block, CUfunction f, CUoccupancyB2DSize b2d, size_t dyn, int limit) {
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!grid || !block || limit < 0) r = CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    if (r) return r;
    if (limit == 0 || limit > 1024) limit = 1024;
    int best = 0, best_n = 0, best_threads = 0;
    for (int t = (limit + 31) / 32 * 32; t > 0; t -= 32) {
        int bs = t < limit ? t : limit;
        size_t d = b2d ? b2d(bs) : dyn; /* the callback runs without mu */
        LOCK();
        int n = blocks_per_sm(f, bs, d);
        UNLOCK();
        if (n * bs > best_threads) { best = bs; best_n = n; best_threads = n * bs; }
        if (best_threads == SM_THREADS) break;
    }
    *grid = best_n * SMS;
    *block = best;
    return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f, CUoccupancyB2DSize b2d, size_t dyn, int limit) {
    FAIL_POINT("cuOccupancyMaxPotentialBlockSize");
    return potential_block_size(grid, block, f, b2d, dyn, limit);
}
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block, CUfunction f, CUoccupancyB2DSize b2d, size_t dyn,
                                                   int limit, unsigned flags) {
    FAIL_POINT("cuOccupancyMaxPotentialBlockSizeWithFlags");
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    return potential_block_size(grid, block, f, b2d, dyn, limit);
}

/* Clusters: a cluster's blocks share a GPC; the simulator counts every
 * multiprocessor's blocks and divides by the cluster size. */
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
    FAIL_POINT("cuOccupancyMaxActiveClusters");
    if (!n || !cfg) return CUDA_ERROR_INVALID_VALUE;
    unsigned cx = 1, cy = 1, cz = 1;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == 4) { /* CLUSTER_DIMENSION */
            cx = cfg->attrs[i].value.clusterDim.x; cy = cfg->attrs[i].value.clusterDim.y; cz = cfg->attrs[i].value.clusterDim.z;
        }
    unsigned size = cx * cy * cz;
    if (!size) return CUDA_ERROR_INVALID_VALUE;
    int per = 0;
    CUresult r = occupancy(&per, f, (int)(cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ), cfg->sharedMemBytes);
    if (r) return r;
    LOCK();
    int portable = size <= 8 || (size <= 16 && f->attr[14]);
    UNLOCK();
    if (!portable) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *n = (int)((unsigned)(per * SMS) / size);
    return CUDA_SUCCESS;
}

/* The parameters of a test kernel, from its row of kernels[]: each starts
 * at the next multiple of its size (all are 4 or 8 bytes). */
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
    FAIL_POINT("cuFuncGetParamInfo");
    STICKY_POINT();
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!offset && !size) r = CUDA_ERROR_INVALID_VALUE;
    else {
        const struct kernel_def *k = &kernels[f->kernel];
        if (index >= (size_t)k->nargs) r = CUDA_ERROR_INVALID_VALUE;
        else {
            size_t off = 0;
            for (size_t i = 0;; i++) {
                off = (off + k->size[i] - 1) / k->size[i] * k->size[i];
                if (i == index) break;
                off += k->size[i];
            }
            if (offset) *offset = off;
            if (size) *size = k->size[index];
        }
    }
    UNLOCK();
    return r;
}

static CUresult launch(CUfunction f, const unsigned dim[6], unsigned shmem, CUstream h, void **params, void **extra) {
    struct task t = { .kind = T_KERNEL };
    LOCK();
    CUresult r = CUDA_SUCCESS;
    if (!initialised) r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!f || f->magic != MAGIC_FUNC) r = CUDA_ERROR_INVALID_HANDLE;
    else if (!dim[0] || !dim[1] || !dim[2] || !dim[3] || !dim[4] || !dim[5] ||
             (uint64_t)dim[3] * dim[4] * dim[5] > 1024 || shmem > (unsigned)f->attr[8])
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!params && extra) r = CUDA_ERROR_NOT_SUPPORTED;
    else if (!params) r = CUDA_ERROR_INVALID_VALUE;
    else {
        const struct kernel_def *k = &kernels[f->kernel];
        /* A NULL entry for a parameter: the real driver's answer is not
         * known (it may well read through the NULL and crash); the
         * simulator refuses it. libcuda's checked launch (Func.Launch,
         * LaunchChecked) refuses a nil argument before the driver, so only
         * a raw cuLaunchKernel gets here with one. */
        for (int i = 0; i < k->nargs && !r; i++)
            if (!params[i]) r = CUDA_ERROR_INVALID_VALUE;
        if (!r) {
            t.kernel = f->kernel;
            for (int i = 0; i < k->nargs; i++) memcpy(&t.arg[i], params[i], k->size[i]);
            if (f->kernel == K_ADD_BIAS) {
                const struct global *g = f->mod ? module_global(f->mod, "bias") : NULL;
                t.arg[5] = g ? (uint64_t)(uintptr_t)g->p : 0;
            }
            st.kernel_launches++;
        }
    }
    UNLOCK();
    return r ? r : enqueue(h, &t);
}
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shmem, CUstream h, void **params, void **extra) {
    FAIL_POINT("cuLaunchKernel");
    STICKY_POINT();
    const unsigned dim[6] = { gx, gy, gz, bx, by, bz };
    return launch(f, dim, shmem, h, params, extra);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
    FAIL_POINT("cuLaunchKernelEx");
    STICKY_POINT();
    if (!cfg || (cfg->numAttrs && !cfg->attrs)) return CUDA_ERROR_INVALID_VALUE;
    const unsigned dim[6] = { cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ,
                              cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ };
    /* The attributes the simulator knows; each runs the kernel as a plain
     * launch would (programmatic serialization allows an early start, it
     * does not demand one), and a programmatic event is recorded after
     * the kernel (as if every block triggered at its exit). */
    CUevent pdl = NULL;
    for (unsigned i = 0; i < cfg->numAttrs; i++) {
        const CUlaunchAttribute *a = &cfg->attrs[i];
        switch (a->id) {
        case 0: case 2: case 4: case 8: break;   /* IGNORE, COOPERATIVE, CLUSTER_DIMENSION, PRIORITY */
        case 6: case 10:                         /* PROGRAMMATIC_STREAM_SERIALIZATION, MEM_SYNC_DOMAIN */
            if (a->value.u > 1) return CUDA_ERROR_INVALID_VALUE;
            break;
        case 7: pdl = a->value.programmaticEvent.event; break; /* PROGRAMMATIC_EVENT */
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    CUresult r = launch(f, dim, cfg->sharedMemBytes, cfg->hStream, params, extra);
    if (!r && pdl) r = event_record(pdl, cfg->hStream, 0);
    return r;
}

/* ===================================================================
 * API: graphs
 * =================================================================== */

CUresult cuGraphCreate(CUgraph *pg, unsigned int flags) {
    FAIL_POINT("cuGraphCreate");
    STICKY_POINT();
    if (!pg || flags) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    if (!r) *pg = graph_new();
    UNLOCK();
    return r;
}

CUresult cuGraphDestroy(CUgraph g) {
    FAIL_POINT("cuGraphDestroy");
    STICKY_POINT();
    LOCK();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !g || g->magic != MAGIC_GRAPH ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (!r) graph_free(g);
    UNLOCK();
    return r;
}

CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num) {
    FAIL_POINT("cuGraphGetNodes");
    STICKY_POINT();
    LOCK();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !g || g->magic != MAGIC_GRAPH || !num ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (!r && !nodes) *num = (size_t)g->n;
    else if (!r) {
        size_t i;
        for (i = 0; i < *num; i++) nodes[i] = i < (size_t)g->n ? g->nodes[i] : NULL;
        if (*num > (size_t)g->n) *num = (size_t)g->n;
    }
    UNLOCK();
    return r;
}

CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type) {
    FAIL_POINT("cuGraphNodeGetType");
    STICKY_POINT();
    if (!node || !type) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *type = node->type;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *px, CUgraph g, unsigned long long flags) {
    FAIL_POINT("cuGraphInstantiateWithFlags");
    STICKY_POINT();
    CUcontext c;
    LOCK();
    gate();
    CUresult r = current_ctx(&c);
    if (!r && (!px || !g || g->magic != MAGIC_GRAPH)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        CUgraphExec x = handle_alloc(&free_execs, sizeof *x);
        x->magic = MAGIC_EXEC;
        x->flags = flags;
        x->ctx = c;
        x->prog = prog_from_graph(g);
        *px = x;
        st.live_graph_execs++;
    }
    UNLOCK();
    return r;
}

CUresult cuGraphExecDestroy(CUgraphExec x) {
    FAIL_POINT("cuGraphExecDestroy");
    STICKY_POINT();
    LOCK();
    gate();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !x || x->magic != MAGIC_EXEC ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (!r) {
        x->magic = 0;
        prog_unref(x->prog);
        op_unref(x->last);
        x->prog = NULL;
        x->last = NULL;
        st.live_graph_execs--;
        handle_free(&free_execs, x);
    }
    UNLOCK();
    return r;
}

CUresult cuGraphUpload(CUgraphExec x, CUstream h) {
    FAIL_POINT("cuGraphUpload");
    STICKY_POINT();
    CUstream s;
    LOCK();
    gate();
    CUresult r = stream_of(h, &s);
    if (!r && (!x || x->magic != MAGIC_EXEC)) r = CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return r;
}

CUresult cuGraphLaunch(CUgraphExec x, CUstream h) {
    FAIL_POINT("cuGraphLaunch");
    STICKY_POINT();
    CUstream s;
    int capturing;
    LOCK();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !x || x->magic != MAGIC_EXEC ? CUDA_ERROR_INVALID_VALUE
               : begin_enqueue(h, &s, &capturing, 1);
    if (!r && !capturing) r = launch_graph_mem(x, 0);
    if (!r) {
        struct task t = { .kind = T_GRAPH, .prog = x->prog };
        if (capturing) {
            /* The driver refuses a graph launch into a capture and
             * invalidates the capture (H200, driver 580). */
            invalidate(s->cap);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else {
            struct op *o = submit(s, &t, x->last);
            op_ref(o);
            op_unref(x->last);
            x->last = o;
            st.graph_launches++;
            launch_graph_mem(x, 1);
        }
    }
    UNLOCK();
    return r;
}

/* Update in place when the graph has the same shape: the same number of
 * nodes, node types and dependencies (by position). The new parameters,
 * kernels included, apply to later launches. */
CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
    FAIL_POINT("cuGraphExecUpdate");
    STICKY_POINT();
    LOCK();
    CUresult r = !initialised ? CUDA_ERROR_NOT_INITIALIZED
               : !x || x->magic != MAGIC_EXEC || !g || g->magic != MAGIC_GRAPH || !info ? CUDA_ERROR_INVALID_VALUE
               : CUDA_SUCCESS;
    if (!r) {
        struct prog *p = x->prog;
        int res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
        CUgraphNode bad = NULL;
        if (p->n != g->n) res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        for (int i = 0; !res && i < g->n; i++) {
            struct CUgraphNode_st *gn = g->nodes[i];
            if (gn->type != p->nodes[i].type) res = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
            /* A memory node at another address: the executable graph's
             * allocation cannot move (the driver's answer is not measured;
             * modelled as not supported, so that the caller instantiates). */
            else if ((gn->t.kind == T_GALLOC || gn->t.kind == T_FREE) && gn->t.dst != p->nodes[i].t.dst)
                res = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
            else if (gn->ndeps != p->nodes[i].ndeps) res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            else for (int j = 0; j < gn->ndeps; j++)
                if (gn->deps[j]->index != p->nodes[i].deps[j]) res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            if (res) bad = gn;
        }
        info->result = res;
        info->errorNode = bad;
        info->errorFromNode = NULL;
        if (res) r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        else {
            x->prog = prog_from_graph(g);
            prog_unref(p);
        }
    }
    UNLOCK();
    return r;
}

/* ===================================================================
 * API: error names and descriptions
 * =================================================================== */

static const struct { CUresult code; const char *name, *text; } errors[] = {
    { 0, "CUDA_SUCCESS", "no error" },
    { 1, "CUDA_ERROR_INVALID_VALUE", "an argument is out of range or not acceptable here" },
    { 2, "CUDA_ERROR_OUT_OF_MEMORY", "not enough memory for the request" },
    { 3, "CUDA_ERROR_NOT_INITIALIZED", "cuInit has not been called" },
    { 100, "CUDA_ERROR_NO_DEVICE", "no device is present" },
    { 101, "CUDA_ERROR_INVALID_DEVICE", "the device ordinal is not valid" },
    { 200, "CUDA_ERROR_INVALID_IMAGE", "the module image is not valid" },
    { 201, "CUDA_ERROR_INVALID_CONTEXT", "no valid context is current, or the context handle is not valid" },
    { 400, "CUDA_ERROR_INVALID_HANDLE", "the handle is not valid" },
    { 401, "CUDA_ERROR_ILLEGAL_STATE", "the operation does not fit the object's current state" },
    { 500, "CUDA_ERROR_NOT_FOUND", "the named symbol was not found" },
    { 600, "CUDA_ERROR_NOT_READY", "the work queried has not finished yet" },
    { 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "device work touched memory it cannot reach; the context is unusable" },
    { 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "the current context is destroyed or an inactive primary context" },
    { 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part of the range is already registered" },
    { 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "the pointer is not the start of a registered range" },
    { 801, "CUDA_ERROR_NOT_SUPPORTED", "the operation is not supported here" },
    { 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "the call is not allowed while a stream capture is in progress" },
    { 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "the stream capture was invalidated by an earlier error" },
    { 902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "the call would merge two separate captures" },
    { 903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not begun on this stream" },
    { 904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "a stream forked into the capture was not joined back" },
    { 905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "the dependency would cross the boundary of the capture" },
    { 906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "the legacy stream would depend implicitly on a capture" },
    { 907, "CUDA_ERROR_CAPTURED_EVENT", "the event was last recorded in a capture" },
    { 908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "the capture must be ended by the thread that began it" },
    { 910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the executable graph cannot take this graph's changes in place" },
    { 999, "CUDA_ERROR_UNKNOWN", "an unknown error" },
};

static CUresult error_lookup(CUresult code, const char **out, int want_name) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) { *out = want_name ? errors[i].name : errors[i].text; return CUDA_SUCCESS; }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorName(CUresult code, const char **name) {
    FAIL_POINT("cuGetErrorName");
    return error_lookup(code, name, 1);
}
CUresult cuGetErrorString(CUresult code, const char **text) {
    FAIL_POINT("cuGetErrorString");
    return error_lookup(code, text, 0);
}

/* ===================================================================
 * API: cuGetProcAddress
 * Entry points by base name and ABI version: the newest entry whose
 * version is not above the one asked for wins. `ptds` is the version of
 * the driver's per-thread-default-stream variant, if it has one; the
 * simulator provides no such variants.
 * =================================================================== */

CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

#define SYM(name, version, ptds, fn) { name, version, ptds, (void *)fn }
static const struct sym { const char *name; int version, ptds; void *fn; } syms[] = {
    SYM("cuGetErrorString", 6000, 0, cuGetErrorString),
    SYM("cuGetErrorName", 6000, 0, cuGetErrorName),
    SYM("cuInit", 2000, 0, cuInit),
    SYM("cuDriverGetVersion", 2020, 0, cuDriverGetVersion),
    SYM("cuDeviceGet", 2000, 0, cuDeviceGet),
    SYM("cuDeviceGetCount", 2000, 0, cuDeviceGetCount),
    SYM("cuDeviceGetName", 2000, 0, cuDeviceGetName),
    SYM("cuDeviceTotalMem", 3020, 0, cuDeviceTotalMem_v2),
    SYM("cuDeviceGetAttribute", 2000, 0, cuDeviceGetAttribute),
    SYM("cuDevicePrimaryCtxRetain", 7000, 0, cuDevicePrimaryCtxRetain),
    SYM("cuDevicePrimaryCtxRelease", 11000, 0, cuDevicePrimaryCtxRelease_v2),
    SYM("cuDevicePrimaryCtxGetState", 7000, 0, cuDevicePrimaryCtxGetState),
    SYM("cuDevicePrimaryCtxSetFlags", 11000, 0, cuDevicePrimaryCtxSetFlags_v2),
    SYM("cuDevicePrimaryCtxReset", 11000, 0, cuDevicePrimaryCtxReset_v2),
    SYM("cuCtxCreate", 12050, 0, cuCtxCreate_v4),
    SYM("cuCtxDestroy", 4000, 0, cuCtxDestroy_v2),
    SYM("cuCtxSetCurrent", 4000, 0, cuCtxSetCurrent),
    SYM("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent),
    SYM("cuCtxPushCurrent", 4000, 0, cuCtxPushCurrent_v2),
    SYM("cuCtxPopCurrent", 4000, 0, cuCtxPopCurrent_v2),
    SYM("cuCtxGetId", 12000, 0, cuCtxGetId),
    SYM("cuCtxGetDevice", 2000, 0, cuCtxGetDevice),
    SYM("cuCtxGetDevice", 13000, 0, cuCtxGetDevice_v2),
    SYM("cuCtxSynchronize", 2000, 0, cuCtxSynchronize),
    SYM("cuCtxSynchronize", 13000, 0, cuCtxSynchronize_v2),
    SYM("cuStreamCreate", 2000, 0, cuStreamCreate),
    SYM("cuStreamCreateWithPriority", 5050, 0, cuStreamCreateWithPriority),
    SYM("cuStreamDestroy", 4000, 0, cuStreamDestroy_v2),
    SYM("cuStreamGetFlags", 5050, 7000, cuStreamGetFlags),
    SYM("cuStreamGetPriority", 5050, 7000, cuStreamGetPriority),
    SYM("cuCtxGetStreamPriorityRange", 5050, 0, cuCtxGetStreamPriorityRange),
    SYM("cuStreamGetCtx", 9020, 9020, cuStreamGetCtx),
    SYM("cuStreamGetId", 12000, 12000, cuStreamGetId),
    SYM("cuStreamQuery", 2000, 7000, cuStreamQuery),
    SYM("cuStreamSynchronize", 2000, 7000, cuStreamSynchronize),
    SYM("cuStreamWaitEvent", 3020, 7000, cuStreamWaitEvent),
    SYM("cuLaunchHostFunc", 10000, 10000, cuLaunchHostFunc),
    SYM("cuStreamWaitValue32", 11070, 11070, cuStreamWaitValue32_v2),
    SYM("cuStreamWaitValue64", 11070, 11070, cuStreamWaitValue64_v2),
    SYM("cuStreamWriteValue32", 11070, 11070, cuStreamWriteValue32_v2),
    SYM("cuStreamWriteValue64", 11070, 11070, cuStreamWriteValue64_v2),
    SYM("cuThreadExchangeStreamCaptureMode", 10010, 0, cuThreadExchangeStreamCaptureMode),
    SYM("cuStreamBeginCapture", 10010, 10010, cuStreamBeginCapture_v2),
    SYM("cuStreamEndCapture", 10000, 10000, cuStreamEndCapture),
    SYM("cuStreamIsCapturing", 10000, 10000, cuStreamIsCapturing),
    SYM("cuStreamGetCaptureInfo", 12030, 12030, cuStreamGetCaptureInfo_v3),
    SYM("cuEventCreate", 2000, 0, cuEventCreate),
    SYM("cuEventDestroy", 4000, 0, cuEventDestroy_v2),
    SYM("cuEventRecord", 2000, 7000, cuEventRecord),
    SYM("cuEventRecordWithFlags", 11010, 11010, cuEventRecordWithFlags),
    SYM("cuEventQuery", 2000, 0, cuEventQuery),
    SYM("cuEventSynchronize", 2000, 0, cuEventSynchronize),
    SYM("cuEventElapsedTime", 2000, 0, cuEventElapsedTime),
    SYM("cuEventElapsedTime", 12080, 0, cuEventElapsedTime_v2),
    SYM("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2),
    SYM("cuMemAlloc", 3020, 0, cuMemAlloc_v2),
    SYM("cuMemFree", 3020, 0, cuMemFree_v2),
    SYM("cuMemAllocAsync", 11020, 11020, cuMemAllocAsync),
    SYM("cuDeviceGraphMemTrim", 11040, 0, cuDeviceGraphMemTrim),
    SYM("cuDeviceGetGraphMemAttribute", 11040, 0, cuDeviceGetGraphMemAttribute),
    SYM("cuDeviceSetGraphMemAttribute", 11040, 0, cuDeviceSetGraphMemAttribute),
    SYM("cuMemFreeAsync", 11020, 11020, cuMemFreeAsync),
    SYM("cuMemAllocHost", 3020, 0, cuMemAllocHost_v2),
    SYM("cuMemHostAlloc", 2020, 0, cuMemHostAlloc),
    SYM("cuMemFreeHost", 2000, 0, cuMemFreeHost),
    SYM("cuMemHostRegister", 4000, 0, cuMemHostRegister),
    SYM("cuMemHostRegister", 6050, 0, cuMemHostRegister_v2),
    SYM("cuMemHostUnregister", 4000, 0, cuMemHostUnregister),
    SYM("cuMemHostGetDevicePointer", 3020, 0, cuMemHostGetDevicePointer_v2),
    SYM("cuMemHostGetFlags", 2030, 0, cuMemHostGetFlags),
    SYM("cuPointerGetAttribute", 4000, 0, cuPointerGetAttribute),
    SYM("cuMemcpy", 4000, 7000, cuMemcpy),
    SYM("cuMemcpyAsync", 4000, 7000, cuMemcpyAsync),
    SYM("cuMemcpyHtoD", 3020, 7000, cuMemcpyHtoD_v2),
    SYM("cuMemcpyDtoH", 3020, 7000, cuMemcpyDtoH_v2),
    SYM("cuMemcpyDtoD", 3020, 7000, cuMemcpyDtoD_v2),
    SYM("cuMemcpyPeer", 4000, 7000, cuMemcpyPeer),
    SYM("cuMemcpyPeerAsync", 4000, 7000, cuMemcpyPeerAsync),
    SYM("cuMemcpyHtoDAsync", 3020, 7000, cuMemcpyHtoDAsync_v2),
    SYM("cuMemcpyDtoHAsync", 3020, 7000, cuMemcpyDtoHAsync_v2),
    SYM("cuMemcpyDtoDAsync", 3020, 7000, cuMemcpyDtoDAsync_v2),
    SYM("cuDeviceGetUuid", 11040, 0, cuDeviceGetUuid_v2),
    SYM("cuDeviceGetPCIBusId", 4010, 0, cuDeviceGetPCIBusId),
    SYM("cuDeviceCanAccessPeer", 4000, 0, cuDeviceCanAccessPeer),
    SYM("cuCtxEnablePeerAccess", 4000, 0, cuCtxEnablePeerAccess),
    SYM("cuMemcpy2DAsync", 3020, 7000, cuMemcpy2DAsync_v2),
    SYM("cuMemAllocFromPoolAsync", 11020, 11020, cuMemAllocFromPoolAsync),
    SYM("cuDeviceGetDefaultMemPool", 11020, 0, cuDeviceGetDefaultMemPool),
    SYM("cuDeviceGetMemPool", 11020, 0, cuDeviceGetMemPool),
    SYM("cuMemPoolCreate", 11020, 0, cuMemPoolCreate),
    SYM("cuMemPoolDestroy", 11020, 0, cuMemPoolDestroy),
    SYM("cuMemPoolTrimTo", 11020, 0, cuMemPoolTrimTo),
    SYM("cuMemPoolSetAttribute", 11020, 0, cuMemPoolSetAttribute),
    SYM("cuMemPoolGetAttribute", 11020, 0, cuMemPoolGetAttribute),
    SYM("cuDeviceSetMemPool", 11020, 0, cuDeviceSetMemPool),
    SYM("cuMemPoolSetAccess", 11020, 0, cuMemPoolSetAccess),
    SYM("cuMemPoolGetAccess", 11020, 0, cuMemPoolGetAccess),
    SYM("cuMemPoolExportToShareableHandle", 11020, 0, cuMemPoolExportToShareableHandle),
    SYM("cuMemPoolImportFromShareableHandle", 11020, 0, cuMemPoolImportFromShareableHandle),
    SYM("cuMemPoolExportPointer", 11020, 0, cuMemPoolExportPointer),
    SYM("cuMemPoolImportPointer", 11020, 0, cuMemPoolImportPointer),
    SYM("cuStreamAttachMemAsync", 6000, 7000, cuStreamAttachMemAsync),
    SYM("cuMemAllocManaged", 6000, 0, cuMemAllocManaged),
    SYM("cuMemPrefetchAsync", 12020, 12020, cuMemPrefetchAsync_v2),
    SYM("cuMemAdvise", 12020, 0, cuMemAdvise_v2),
    SYM("cuMemRangeGetAttribute", 8000, 0, cuMemRangeGetAttribute),
    SYM("cuMemsetD8", 3020, 7000, cuMemsetD8_v2),
    SYM("cuMemsetD32", 3020, 7000, cuMemsetD32_v2),
    SYM("cuMemsetD8Async", 3020, 7000, cuMemsetD8Async),
    SYM("cuMemsetD16Async", 3020, 7000, cuMemsetD16Async),
    SYM("cuMemsetD32Async", 3020, 7000, cuMemsetD32Async),
    SYM("cuModuleLoadData", 2000, 0, cuModuleLoadData),
    SYM("cuModuleLoadDataEx", 2010, 0, cuModuleLoadDataEx),
    SYM("cuModuleUnload", 2000, 0, cuModuleUnload),
    SYM("cuModuleGetFunction", 2000, 0, cuModuleGetFunction),
    SYM("cuModuleGetFunctionCount", 12040, 0, cuModuleGetFunctionCount),
    SYM("cuModuleEnumerateFunctions", 12040, 0, cuModuleEnumerateFunctions),
    SYM("cuFuncGetName", 12030, 0, cuFuncGetName),
    SYM("cuFuncGetAttribute", 2020, 0, cuFuncGetAttribute),
    SYM("cuFuncGetParamInfo", 12040, 0, cuFuncGetParamInfo),
    SYM("cuFuncSetAttribute", 9000, 0, cuFuncSetAttribute),
    SYM("cuModuleGetGlobal", 3020, 0, cuModuleGetGlobal_v2),
    SYM("cuLibraryLoadData", 12000, 0, cuLibraryLoadData),
    SYM("cuLibraryGetModule", 12000, 0, cuLibraryGetModule),
    SYM("cuLibraryUnload", 12000, 0, cuLibraryUnload),
    SYM("cuLinkCreate", 6050, 0, cuLinkCreate_v2),
    SYM("cuLinkAddData", 6050, 0, cuLinkAddData_v2),
    SYM("cuLinkComplete", 5050, 0, cuLinkComplete),
    SYM("cuLinkDestroy", 5050, 0, cuLinkDestroy),
    SYM("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, 0, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    SYM("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000, 0, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
    SYM("cuOccupancyMaxPotentialBlockSize", 6050, 0, cuOccupancyMaxPotentialBlockSize),
    SYM("cuOccupancyMaxPotentialBlockSizeWithFlags", 7000, 0, cuOccupancyMaxPotentialBlockSizeWithFlags),
    SYM("cuOccupancyMaxActiveClusters", 11070, 0, cuOccupancyMaxActiveClusters),
    SYM("cuOccupancyAvailableDynamicSMemPerBlock", 10020, 0, cuOccupancyAvailableDynamicSMemPerBlock),
    SYM("cuLaunchKernel", 4000, 7000, cuLaunchKernel),
    SYM("cuLaunchKernelEx", 11060, 11060, cuLaunchKernelEx),
    SYM("cuGraphCreate", 10000, 0, cuGraphCreate),
    SYM("cuGraphDestroy", 10000, 0, cuGraphDestroy),
    SYM("cuGraphGetNodes", 10000, 0, cuGraphGetNodes),
    SYM("cuGraphNodeGetType", 10000, 0, cuGraphNodeGetType),
    SYM("cuGraphInstantiateWithFlags", 11040, 0, cuGraphInstantiateWithFlags),
    SYM("cuGraphInstantiate", 12000, 0, cuGraphInstantiateWithFlags),
    SYM("cuGraphExecDestroy", 10000, 0, cuGraphExecDestroy),
    SYM("cuGraphUpload", 11010, 11010, cuGraphUpload),
    SYM("cuGraphLaunch", 10000, 10000, cuGraphLaunch),
    SYM("cuGraphExecUpdate", 12000, 0, cuGraphExecUpdate_v2),
    SYM("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2),
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    FAIL_POINT("cuGetProcAddress");
    if (!symbol || !pfn || version > DRIVER_VERSION || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    const struct sym *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (strcmp(syms[i].name, symbol) == 0) {
            known = 1;
            if (syms[i].version <= version && (!best || syms[i].version > best->version)) best = &syms[i];
        }
    int res = !known ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND : !best ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                                           : CU_GET_PROC_ADDRESS_SUCCESS;
    if (!res && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptds)
        res = version < best->ptds ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *pfn = res ? NULL : best->fn;
    if (status) *status = res;
    return CUDA_SUCCESS;
}

/* ===================================================================
 * Test hooks
 * =================================================================== */

int sim_fail_after(const char *name, int skip, int count, int code) {
    if (!name || strlen(name) >= sizeof faults[0].name) return -1;
    int r = -1;
    LOCK();
    struct fault *slot = NULL;
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        if (strcmp(faults[i].name, name) == 0) { slot = &faults[i]; break; }
        if (!slot && faults[i].left <= 0) slot = &faults[i];
    }
    if (slot) {
        strcpy(slot->name, name);
        slot->skip = skip > 0 ? skip : 0;
        slot->left = count > 0 ? count : 0;
        slot->code = code;
        r = 0;
    }
    recount_faults();
    UNLOCK();
    return r;
}

int sim_fail_next(const char *name, int count, int code) { return sim_fail_after(name, 0, count, code); }

static const struct { const char *name; long long *value; int cumulative; } stat_names[] = {
    { "registered_ranges", &st.registered_ranges, 0 },
    { "registered_bytes", &st.registered_bytes, 0 },
    { "live_streams", &st.live_streams, 0 },
    { "live_events", &st.live_events, 0 },
    { "live_allocations", &st.live_allocations, 0 },
    { "live_host_allocations", &st.live_host_allocations, 0 },
    { "live_graphs", &st.live_graphs, 0 },
    { "live_graph_execs", &st.live_graph_execs, 0 },
    { "live_modules", &st.live_modules, 0 },
    { "active_captures", &st.active_captures, 0 },
    { "captures_invalidated", &st.captures_invalidated, 1 },
    { "unregister_calls", &st.unregister_calls, 1 },
    { "register_calls", &st.register_calls, 1 },
    { "fences", &st.fences, 1 },
    { "kernel_launches", &st.kernel_launches, 1 },
    { "graph_launches", &st.graph_launches, 1 },
    { "illegal_addresses", &st.illegal_addresses, 1 },
    { "event_queries", &st.event_queries, 1 },
    { "event_records", &st.event_records, 1 },     /* cuEventRecord(WithFlags) calls recorded outside a capture */
    { "fenced_calls", &st.fenced_calls, 1 },
    { "ctx_synchronize_calls", &st.ctx_synchronize_calls, 1 },
    { "syncs_waiting", &st.syncs_waiting, 1 },     /* cu{Ctx,Stream,Event}Synchronize calls past their checks, waiting (or done) */
    { "event_creates", &st.event_creates, 1 },     /* cuEventCreate calls that made an event */
    { "pageable_copies", &st.pageable_copies, 1 }, /* async copies with a side the device cannot reach */
    { "pool_trims", &st.pool_trims, 1 },           /* cuMemPoolTrimTo calls */
    { "graph_mem_trims", &st.graph_mem_trims, 1 }, /* cuDeviceGraphMemTrim calls */
    { "live_graph_allocations", &st.live_graph_allocations, 0 }, /* graph allocations with an address (held by a node, or live) */
    { "attach_global", &st.attach_global, 1 },     /* cuStreamAttachMemAsync with CU_MEM_ATTACH_GLOBAL */
    { "attach_host", &st.attach_host, 1 },         /* ... CU_MEM_ATTACH_HOST */
    { "attach_single", &st.attach_single, 1 },     /* ... CU_MEM_ATTACH_SINGLE */
    { "last_trimmed_pool", &st.last_trimmed_pool, 0 }, /* the pool of the last cuMemPoolTrimTo that worked */
    { "live_link_states", &st.live_link_states, 0 },
};

long long sim_stat(const char *name) {
    long long v = -1;
    /* Calls of an entry point since the library was loaded (FAIL_POINT). */
    if (name && strncmp(name, "calls:", 6) == 0) return calls_of(name + 6, 0);
    if (name && strncmp(name, "thread_calls:", 13) == 0) return calls_of(name + 13, 1);
    /* "primary_retains:N": the retains of device N's primary context. */
    if (name && strncmp(name, "primary_retains:", 16) == 0) {
        int dev = atoi(name + 16);
        if (dev < 0 || dev >= MAX_DEVICES) return -1;
        LOCK();
        v = primary_ctx[dev].retains;
        UNLOCK();
        return v;
    }
    LOCK();
    for (size_t i = 0; name && i < sizeof stat_names / sizeof stat_names[0]; i++)
        if (strcmp(stat_names[i].name, name) == 0) v = *stat_names[i].value;
    UNLOCK();
    return v;
}

/* sim_call_name(i) is the entry point of the i-th call site called so far
 * (NULL past the last). */
const char *sim_call_name(int i) {
    if (i < 0 || i >= __atomic_load_n(&ncall_sites, __ATOMIC_ACQUIRE)) return NULL;
    return __atomic_load_n(&call_sites[i], __ATOMIC_ACQUIRE)->name;
}

/* sim_call_counts copies the calls of the first n call sites (of every
 * thread, since the library was loaded) to out and returns how many sites
 * have been called. A test counts the calls an operation makes as the
 * difference of two readings (testenv.CountCalls): one call each, so that
 * little time around the operation is counted with it. */
int sim_call_counts(long long *out, int n, int thread) {
    int m = __atomic_load_n(&ncall_sites, __ATOMIC_ACQUIRE);
    for (int i = 0; i < m && i < n; i++)
        out[i] = thread ? thread_call_counts[i] : __atomic_load_n(&call_counts[i], __ATOMIC_RELAXED);
    return m;
}

void sim_reset_stats(void) {
    LOCK();
    for (size_t i = 0; i < sizeof stat_names / sizeof stat_names[0]; i++)
        if (stat_names[i].cumulative) *stat_names[i].value = 0;
    UNLOCK();
}
