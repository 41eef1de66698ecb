/*
 * sim_selftest.c: checks that the simulator (sim.c) keeps the driver's rules.
 *
 *     cc -O2 -shared -fPIC -pthread -o /tmp/libcudasim.so tests/sim/sim.c
 *     cc -O2 -pthread -o /tmp/sim_selftest tests/sim/sim_selftest.c -ldl
 *     /tmp/sim_selftest /tmp/libcudasim.so
 *     PURECUDA_SIM_DEVICES=2 /tmp/sim_selftest /tmp/libcudasim.so
 *
 * and the same with -g -O1 -fsanitize=thread on both builds for the race check.
 *
 * The same program runs against the real driver, to compare:
 *
 *     /tmp/sim_selftest libcuda.so.1 kernels.ptx
 *
 * where kernels.ptx holds the four test kernels (add_one_i32, fill_i32,
 * sum_i64, spin). Checks of the simulator's own hooks (sim_stat,
 * sim_fail_next) and of faults are then skipped. The program loads every
 * function through cuGetProcAddress_v2 by base name, as the Go binding does,
 * and reads device memory only through copies. It prints each failed check
 * and the capture matrix, and exits 1 if any check failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the few driver types and values used here ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct ctx_ *CUcontext;
typedef struct stream_ *CUstream;
typedef struct event_ *CUevent;
typedef struct module_ *CUmodule;
typedef struct func_ *CUfunction;
typedef struct graph_ *CUgraph;
typedef struct node_ *CUgraphNode;
typedef struct exec_ *CUgraphExec;
typedef struct { int result; CUgraphNode errorNode, errorFromNode; } UpdateInfo;
#define LEGACY ((CUstream)0x1)
#define PER_THREAD ((CUstream)0x2)
enum { GLOBAL = 0, THREAD_LOCAL = 1, RELAXED = 2 };
enum { NON_BLOCKING = 1 };
enum { WAIT_GEQ = 0, WAIT_EQ = 1 };

/* ---- functions, loaded by base name ---- */
static CUresult (*cuGetProcAddress)(const char *, void **, int, unsigned long long, int *);
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDriverGetVersion)(int *);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetCount)(int *);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuCtxGetCurrent)(CUcontext *);
static CUresult (*cuCtxGetDevice)(CUdevice *);
static CUresult (*cuCtxCreate)(CUcontext *, void *, unsigned, CUdevice);
static CUresult (*cuCtxDestroy)(CUcontext);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamDestroy)(CUstream);
static CUresult (*cuStreamQuery)(CUstream);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuStreamGetFlags)(CUstream, unsigned *);
static CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
static CUresult (*cuStreamBeginCapture)(CUstream, int);
static CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
static CUresult (*cuStreamIsCapturing)(CUstream, int *);
static CUresult (*cuStreamGetCaptureInfo)(CUstream, int *, unsigned long long *, CUgraph *, const CUgraphNode **,
                                          const void **, size_t *);
static CUresult (*cuThreadExchangeStreamCaptureMode)(int *);
static CUresult (*cuStreamWaitValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
static CUresult (*cuStreamWriteValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
static CUresult (*cuStreamWaitValue64)(CUstream, CUdeviceptr, uint64_t, unsigned);
static CUresult (*cuStreamWriteValue64)(CUstream, CUdeviceptr, uint64_t, unsigned);
static CUresult (*cuEventCreate)(CUevent *, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventQuery)(CUevent);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventDestroy)(CUevent);
static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
static CUresult (*cuMemFreeHost)(void *);
static CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
static CUresult (*cuMemHostUnregister)(void *);
static CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
static CUresult (*cuMemHostGetFlags)(unsigned *, void *);
static CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
static CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleUnload)(CUmodule);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **, void **);
static CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
static CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
static CUresult (*cuGraphUpload)(CUgraphExec, CUstream);
static CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph, UpdateInfo *);
static CUresult (*cuGraphDestroy)(CUgraph);
static CUresult (*cuGraphExecDestroy)(CUgraphExec);
static CUresult (*cuGetErrorName)(CUresult, const char **);

/* simulator hooks; NULL on the real driver */
static int (*sim_fail_next)(const char *, int, int);
static int (*sim_fail_after)(const char *, int, int, int);
static long long (*sim_stat)(const char *);

/* ---- checking ---- */
static int failures, checks;
#define CHECK(cond, ...) do { __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED); \
    if (!(cond)) { __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); printf("FAIL %s:%d: ", __FILE__, __LINE__); \
    printf(__VA_ARGS__); printf("\n"); } } while (0)
#define EXPECT(call, want) do { CUresult got_ = (call); CHECK(got_ == (want), "%s = %d, want %d", #call, got_, (want)); } while (0)
#define OK(call) EXPECT(call, 0)

static void *lib;
static int load(void **fn, const char *name, int version) {
    int status = -1;
    CUresult r = cuGetProcAddress(name, fn, version, 1 /* LEGACY_STREAM */, &status);
    if (r || status || !*fn) { printf("FAIL: cannot load %s@%d: result %d status %d\n", name, version, r, status); failures++; }
    return r;
}
#define LOAD(fn, name, version) load((void **)&fn, name, version)

static void sleep_ms(int ms) {
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&t, NULL);
}
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static void *page_alloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 4096, n)) abort();
    memset(p, 0, n);
    return p;
}
static void store32(volatile uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* ---- common state ---- */
static CUcontext ctx;
static CUfunction k_add, k_fill, k_sum, k_spin;
enum { N = 1024 };

static CUresult add_one(CUstream s, CUdeviceptr d, unsigned long long n) {
    void *args[] = { &d, &n };
    return cuLaunchKernel(k_add, 4, 1, 1, 256, 1, 1, 0, s, args, NULL);
}
static CUresult fill(CUstream s, CUdeviceptr d, unsigned long long n, int v) {
    void *args[] = { &d, &n, &v };
    return cuLaunchKernel(k_fill, 4, 1, 1, 256, 1, 1, 0, s, args, NULL);
}
static CUresult spin(CUstream s, unsigned long long ns) {
    void *args[] = { &ns };
    return cuLaunchKernel(k_spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}
/* Whether every element of a device buffer equals v. */
static int all_equal(CUdeviceptr d, size_t n, int v) {
    int *h = calloc(n, sizeof *h);
    OK(cuMemcpyDtoH(h, d, n * sizeof *h));
    size_t i = 0;
    while (i < n && h[i] == v) i++;
    free(h);
    return i == n;
}
static void set_mode(int mode) { OK(cuThreadExchangeStreamCaptureMode(&mode)); }

/* ===================================================================
 * Loading, initialisation, cuGetProcAddress, devices
 * =================================================================== */

static void test_proc_address_and_init(void) {
    void *fn = (void *)1;
    int status = 7;
    EXPECT(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 1, &status), 0);
    CHECK(status == 1 && fn == NULL, "unknown symbol: status %d fn %p", status, fn);
    status = 7;
    EXPECT(cuGetProcAddress("cuMemAlloc", &fn, 13010, 1, &status), 1);
    CHECK(status == 7, "version above the driver's left status %d", status);
    OK(cuGetProcAddress("cuCtxCreate", &fn, 12050, 1, &status));
    CHECK(status == 0 && fn == dlsym(lib, "cuCtxCreate_v4"), "cuCtxCreate@12050 is cuCtxCreate_v4");
    OK(cuGetProcAddress("cuMemHostRegister", &fn, 6050, 1, &status));
    CHECK(status == 0 && fn == dlsym(lib, "cuMemHostRegister_v2"), "cuMemHostRegister@6050 is _v2");
    OK(cuGetProcAddress("cuMemHostRegister", &fn, 4000, 1, &status));
    CHECK(status == 0 && fn == dlsym(lib, "cuMemHostRegister"), "cuMemHostRegister@4000 is v1");
    OK(cuGetProcAddress("cuCtxSynchronize", &fn, 12000, 1, &status));
    CHECK(status == 0 && fn == dlsym(lib, "cuCtxSynchronize"), "cuCtxSynchronize@12000 is v1");
    OK(cuGetProcAddress("cuGraphCreate", &fn, 9000, 1, &status));
    CHECK(status == 2 && fn == NULL, "cuGraphCreate@9000: status %d", status);
    OK(cuGetProcAddress("cuMemcpyHtoD", &fn, 3020, 2 /* PER_THREAD_DEFAULT_STREAM */, &status));
    CHECK(status == 2 && fn == NULL, "per-thread cuMemcpyHtoD@3020: status %d", status);

    int count = -1, version = 0;
    EXPECT(cuDeviceGetCount(&count), 3); /* before cuInit */
    OK(cuDriverGetVersion(&version));
    CHECK(version == 13000, "driver version %d", version);
    OK(cuInit(0));
    OK(cuInit(0));
    OK(cuDeviceGetCount(&count));
    if (sim_stat) {
        const char *env = getenv("PURECUDA_SIM_DEVICES");
        CHECK(count == (env && atoi(env) == 2 ? 2 : 1), "device count %d", count);
    }
    CUdevice dev;
    OK(cuDeviceGet(&dev, 0));
    EXPECT(cuDeviceGet(&dev, count), 101);

    static const struct { int attr, want; const char *name; } attrs[] = {
        { 75, 9, "COMPUTE_CAPABILITY_MAJOR" }, { 76, 0, "COMPUTE_CAPABILITY_MINOR" },
        { 19, 1, "CAN_MAP_HOST_MEMORY" }, { 41, 1, "UNIFIED_ADDRESSING" }, { 88, 0, "PAGEABLE_MEMORY_ACCESS" },
        { 99, 1, "HOST_REGISTER_SUPPORTED" }, { 91, 1, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM" },
        { 92, 0, "CAN_USE_STREAM_MEM_OPS_V1" }, { 93, 0, "CAN_USE_64_BIT_STREAM_MEM_OPS_V1" },
        { 94, 0, "CAN_USE_STREAM_WAIT_VALUE_NOR_V1" }, { 122, 1, "CAN_USE_64_BIT_STREAM_MEM_OPS" },
        { 123, 1, "CAN_USE_STREAM_WAIT_VALUE_NOR" }, { 16, 132, "MULTIPROCESSOR_COUNT" },
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = -1;
        OK(cuDeviceGetAttribute(&v, attrs[i].attr, 0));
        CHECK(v == attrs[i].want, "attribute %s = %d, want %d", attrs[i].name, v, attrs[i].want);
    }
    int v;
    EXPECT(cuDeviceGetAttribute(&v, 100000, 0), 1);

    const char *name = NULL;
    OK(cuGetErrorName(900, &name));
    CHECK(name && strcmp(name, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") == 0, "name of 900: %s", name);
    EXPECT(cuGetErrorName(123456, &name), 1);

    /* no context yet */
    CUstream s;
    CUdeviceptr d;
    EXPECT(cuStreamCreate(&s, 0), 201);
    EXPECT(cuMemAlloc(&d, 16), 201);
    EXPECT(cuCtxSynchronize(), 201);

    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    CUcontext cur = NULL;
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == ctx, "current context");
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 0, "context device %d", dev);
}

static const char fake_ptx[] =
    "// stand-in image for the simulator: only the entry names matter\n"
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_one_i32(\n.param .u64 a, .param .u64 b\n)\n{ ret; }\n"
    ".visible .entry fill_i32(.param .u64 a, .param .u64 b, .param .u32 c) { ret; }\n"
    ".visible .entry sum_i64(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d) { ret; }\n"
    ".visible .entry spin(.param .u64 a) { ret; }\n"
    ".visible .entry something_else() { ret; }\n";

static CUmodule module;
static void load_kernels(const char *ptx_path) {
    char *image = (char *)fake_ptx;
    if (ptx_path) {
        FILE *f = fopen(ptx_path, "rb");
        if (!f) { perror(ptx_path); exit(2); }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        image = calloc(1, (size_t)n + 1);
        if (fread(image, 1, (size_t)n, f) != (size_t)n) { perror("read"); exit(2); }
        fclose(f);
    }
    OK(cuModuleLoadData(&module, image));
    OK(cuModuleGetFunction(&k_add, module, "add_one_i32"));
    OK(cuModuleGetFunction(&k_fill, module, "fill_i32"));
    OK(cuModuleGetFunction(&k_sum, module, "sum_i64"));
    OK(cuModuleGetFunction(&k_spin, module, "spin"));
    CUfunction f;
    EXPECT(cuModuleGetFunction(&f, module, "no_such_kernel"), 500);
    CUmodule m2;
    EXPECT(cuModuleLoadData(&m2, "not an image"), 200);
}

/* ===================================================================
 * Kernels, copies, streams, events
 * =================================================================== */

static void test_kernels_and_copies(void) {
    CUstream s;
    CUdeviceptr d, in, out;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc(&d, N * sizeof(int)));
    OK(cuMemsetD32(d, 5, N));
    OK(add_one(s, d, N));
    OK(add_one(s, d, N));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 7), "add_one twice on 5");
    OK(fill(s, d, N, -3));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, -3), "fill");

    long long host[100], sum = 0, got = 0;
    for (int i = 0; i < 100; i++) sum += host[i] = (long long)i * 1000003;
    OK(cuMemAlloc(&in, sizeof host));
    OK(cuMemAlloc(&out, 8));
    OK(cuMemcpyHtoD(in, host, sizeof host));
    unsigned long long n = 100, spin_ns = 1000000;
    void *args[] = { &in, &n, &out, &spin_ns };
    OK(cuLaunchKernel(k_sum, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    OK(cuStreamSynchronize(s));
    OK(cuMemcpyDtoH(&got, out, 8));
    CHECK(got == sum, "sum_i64 %lld, want %lld", got, sum);
    if (sim_stat) { /* a NULL parameter entry: refused here; the real driver may crash */
        long long launches = sim_stat("kernel_launches");
        void *nulls[] = { &in, &n, NULL, &spin_ns };
        EXPECT(cuLaunchKernel(k_sum, 1, 1, 1, 1, 1, 1, 0, s, nulls, NULL), 1);
        CHECK(sim_stat("kernel_launches") == launches, "a refused launch is not counted");
    }

    unsigned flags = 9;
    CUstream nb;
    OK(cuStreamCreate(&nb, NON_BLOCKING));
    OK(cuStreamGetFlags(nb, &flags));
    CHECK(flags == NON_BLOCKING, "flags %u", flags);
    OK(cuStreamGetFlags(NULL, &flags));
    CHECK(flags == 0, "legacy flags %u", flags);

    /* events and elapsed time */
    CUevent a, b, nt;
    float ms = 0;
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 1 /* BLOCKING_SYNC */));
    OK(cuEventCreate(&nt, 2 /* DISABLE_TIMING */));
    OK(cuEventQuery(a)); /* never recorded */
    OK(cuEventRecord(a, s));
    OK(spin(s, 20000000));
    OK(cuEventRecord(b, s));
    OK(cuEventRecord(nt, s));
    OK(cuEventSynchronize(b));
    OK(cuEventElapsedTime(&ms, a, b));
    CHECK(ms >= 15 && ms < 1000, "elapsed %.3f ms around a 20 ms spin", ms);
    EXPECT(cuEventElapsedTime(&ms, a, nt), 400);
    OK(cuEventDestroy(a));
    OK(cuEventDestroy(b));
    OK(cuEventDestroy(nt));
    if (sim_stat) EXPECT(cuEventQuery(a), 400); /* the real driver may crash on a dead handle */

    OK(cuMemFree(d));
    OK(cuMemFree(in));
    OK(cuMemFree(out));
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(nb));
    if (sim_stat) EXPECT(cuStreamQuery(s), 400);
}

/* Stream memory operations keep a stream busy until the host says so. */
static void test_wait_value(void) {
    uint32_t *flags = page_alloc(4096);
    uint64_t *flag64 = (uint64_t *)(flags + 16);
    OK(cuMemHostRegister(flags, 4096, 0));
    CUstream s, t;
    CUdeviceptr d;
    OK(cuStreamCreate(&s, NON_BLOCKING));
    OK(cuStreamCreate(&t, NON_BLOCKING));
    OK(cuMemAlloc(&d, N * sizeof(int)));
    OK(cuMemsetD32(d, 0, N));

    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)&flags[0], 1, WAIT_EQ));
    OK(add_one(s, d, N));
    EXPECT(cuStreamQuery(s), 600);
    sleep_ms(30);
    EXPECT(cuStreamQuery(s), 600);
    store32(&flags[0], 1);
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 1), "kernel after the wait ran");

    /* released by a write from another stream */
    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)&flags[1], 5, WAIT_GEQ));
    OK(add_one(s, d, N));
    sleep_ms(10);
    EXPECT(cuStreamQuery(s), 600);
    OK(cuStreamWriteValue32(t, (CUdeviceptr)(uintptr_t)&flags[1], 7, 0));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 2), "kernel after the written wait ran");

    /* 64-bit */
    OK(cuStreamWaitValue64(s, (CUdeviceptr)(uintptr_t)flag64, 0x100000000ull, WAIT_EQ));
    sleep_ms(10);
    EXPECT(cuStreamQuery(s), 600);
    OK(cuStreamWriteValue64(t, (CUdeviceptr)(uintptr_t)flag64, 0x100000000ull, 0));
    OK(cuStreamSynchronize(s));

    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(t));
    OK(cuMemFree(d));
    OK(cuMemHostUnregister(flags));
    free(flags);
}

/* The legacy stream waits for blocking streams and they for it; non-blocking
 * streams are exempt. */
static void test_legacy_stream(void) {
    uint32_t *flags = page_alloc(4096);
    OK(cuMemHostRegister(flags, 4096, 0));
    CUstream b, nb;
    CUdeviceptr d, dpt, dnb; /* one buffer per stream that may run concurrently */
    OK(cuStreamCreate(&b, 0));
    OK(cuStreamCreate(&nb, NON_BLOCKING));
    OK(cuMemAlloc(&d, N * sizeof(int)));
    OK(cuMemAlloc(&dpt, N * sizeof(int)));
    OK(cuMemAlloc(&dnb, N * sizeof(int)));
    OK(cuMemsetD32(d, 0, N));
    OK(cuMemsetD32(dpt, 0, N));
    OK(cuMemsetD32(dnb, 0, N));

    OK(cuStreamWaitValue32(b, (CUdeviceptr)(uintptr_t)&flags[0], 1, WAIT_EQ));
    OK(add_one(NULL, d, N));
    OK(add_one(nb, dnb, N));
    OK(cuStreamSynchronize(nb)); /* not held by b */
    sleep_ms(10);
    EXPECT(cuStreamQuery(NULL), 600);
    EXPECT(cuStreamQuery(LEGACY), 600);
    store32(&flags[0], 1);
    OK(cuStreamSynchronize(NULL));
    CHECK(all_equal(d, N, 1) && all_equal(dnb, N, 1), "legacy and non-blocking kernels both ran");

    OK(cuStreamWaitValue32(NULL, (CUdeviceptr)(uintptr_t)&flags[1], 1, WAIT_EQ));
    OK(add_one(b, d, N));
    OK(add_one(PER_THREAD, dpt, N));
    OK(add_one(nb, dnb, N));
    OK(cuStreamSynchronize(nb));
    sleep_ms(10);
    EXPECT(cuStreamQuery(b), 600);
    EXPECT(cuStreamQuery(PER_THREAD), 600);
    store32(&flags[1], 1);
    OK(cuStreamSynchronize(b));
    OK(cuStreamSynchronize(PER_THREAD));
    CHECK(all_equal(d, N, 2) && all_equal(dpt, N, 1) && all_equal(dnb, N, 2),
          "blocking streams ran after the legacy stream");

    OK(cuStreamDestroy(b));
    OK(cuStreamDestroy(nb));
    OK(cuMemFree(d));
    OK(cuMemFree(dpt));
    OK(cuMemFree(dnb));
    OK(cuMemHostUnregister(flags));
    free(flags);
}

/* An event recorded on a stream destroyed before its work ends still completes. */
static void test_event_after_stream_destroy(void) {
    uint32_t *flags = page_alloc(4096);
    OK(cuMemHostRegister(flags, 4096, 0));
    CUstream s;
    CUevent e;
    OK(cuStreamCreate(&s, NON_BLOCKING));
    OK(cuEventCreate(&e, 2));
    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)flags, 1, WAIT_EQ));
    OK(cuEventRecord(e, s));
    OK(cuStreamDestroy(s));
    sleep_ms(10);
    EXPECT(cuEventQuery(e), 600);
    store32(flags, 1);
    OK(cuEventSynchronize(e));
    OK(cuEventQuery(e));
    OK(cuEventDestroy(e));
    OK(cuMemHostUnregister(flags));
    free(flags);
}

/* Per-thread default streams are one per thread. */
static uint32_t *pt_flag;
static void *per_thread_other(void *arg) {
    (void)arg;
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamQuery(PER_THREAD)); /* this thread's own, idle */
    OK(cuStreamSynchronize(PER_THREAD));
    return NULL;
}
static void test_per_thread_stream(void) {
    pt_flag = page_alloc(4096);
    OK(cuMemHostRegister(pt_flag, 4096, 0));
    CUstream nb;
    OK(cuStreamCreate(&nb, NON_BLOCKING));
    OK(cuStreamWaitValue32(PER_THREAD, (CUdeviceptr)(uintptr_t)pt_flag, 1, WAIT_EQ));
    sleep_ms(5);
    EXPECT(cuStreamQuery(PER_THREAD), 600);
    pthread_t th;
    pthread_create(&th, NULL, per_thread_other, NULL);
    pthread_join(th, NULL);
    store32(pt_flag, 1);
    OK(cuStreamSynchronize(PER_THREAD));
    OK(cuStreamDestroy(nb));
    OK(cuMemHostUnregister(pt_flag));
    free(pt_flag);
}

/* ===================================================================
 * Host memory registration
 * =================================================================== */

static void test_registration(void) {
    char *buf = page_alloc(3 * 4096), *other = page_alloc(4096);
    long long ranges0 = sim_stat ? sim_stat("registered_ranges") : 0;
    OK(cuMemHostRegister(buf, 100, 0));
    OK(cuMemHostRegister(buf + 100, 100, 0));                  /* adjacent */
    EXPECT(cuMemHostRegister(buf + 50, 100, 0), 712);          /* partial overlap */
    EXPECT(cuMemHostRegister(buf + 10, 10, 0), 712);           /* inside */
    EXPECT(cuMemHostRegister(buf, 100, 0), 712);               /* identical */
    OK(cuMemHostRegister(buf + 4000, 8192, 0));                /* spans pages */
    OK(cuMemHostRegister(buf + 1000, 100, 0));                 /* disjoint, same page */
    EXPECT(cuMemHostRegister(NULL, 100, 0), 1);
    EXPECT(cuMemHostRegister(buf + 2000, 0, 0), 1);
    if (sim_stat) {
        CHECK(sim_stat("registered_ranges") == ranges0 + 4, "registered_ranges %lld", sim_stat("registered_ranges"));
        CHECK(sim_stat("registered_bytes") >= 300 + 8192, "registered_bytes %lld", sim_stat("registered_bytes"));
    }

    CUdeviceptr dp = 0;
    OK(cuMemHostGetDevicePointer(&dp, buf + 150, 0));
    CHECK(dp == (CUdeviceptr)(uintptr_t)(buf + 150), "device pointer of registered memory is its host pointer");
    EXPECT(cuMemHostGetDevicePointer(&dp, other, 0), 1);
    unsigned mt = 0;
    CUdeviceptr dptr = 0;
    void *hptr = NULL;
    CUcontext c = NULL;
    OK(cuPointerGetAttribute(&mt, 2 /* MEMORY_TYPE */, (CUdeviceptr)(uintptr_t)(buf + 5)));
    CHECK(mt == 1, "memory type of registered memory %u", mt);
    OK(cuPointerGetAttribute(&dptr, 3 /* DEVICE_POINTER */, (CUdeviceptr)(uintptr_t)(buf + 5)));
    CHECK(dptr == (CUdeviceptr)(uintptr_t)(buf + 5), "DEVICE_POINTER");
    OK(cuPointerGetAttribute(&hptr, 4 /* HOST_POINTER */, (CUdeviceptr)(uintptr_t)(buf + 5)));
    CHECK(hptr == buf + 5, "HOST_POINTER");
    OK(cuPointerGetAttribute(&c, 1 /* CONTEXT */, (CUdeviceptr)(uintptr_t)(buf + 5)));
    CHECK(c == ctx, "CONTEXT");
    EXPECT(cuPointerGetAttribute(&mt, 2, (CUdeviceptr)(uintptr_t)other), 1);
    unsigned fl = 99;
    OK(cuMemHostGetFlags(&fl, buf + 5));
    CHECK(fl == 2, "flags of registered memory %u (DEVICEMAP)", fl);

    EXPECT(cuMemHostUnregister(buf + 10), 1);                  /* interior */
    OK(cuMemHostUnregister(buf + 100));
    EXPECT(cuMemHostUnregister(buf + 100), 713);               /* already unregistered */
    EXPECT(cuMemHostUnregister(other), 713);                   /* unknown */
    EXPECT(cuMemHostUnregister(NULL), 1);
    OK(cuMemHostUnregister(buf));
    OK(cuMemHostUnregister(buf + 1000));
    OK(cuMemHostUnregister(buf + 4000));
    if (sim_stat) CHECK(sim_stat("registered_ranges") == ranges0, "registered_ranges back to %lld", ranges0);

    /* pinned allocations */
    void *h = NULL;
    CUdeviceptr hd;
    OK(cuMemHostAlloc(&h, 1000, 1 | 2 /* PORTABLE | DEVICEMAP */));
    OK(cuMemHostGetDevicePointer(&hd, (char *)h + 10, 0));
    CHECK(hd == (CUdeviceptr)(uintptr_t)h + 10, "device pointer of pinned memory");
    EXPECT(cuMemHostRegister((char *)h + 100, 100, 0), 1); /* inside pinned memory */
    EXPECT(cuMemHostUnregister(h), 1);
    EXPECT(cuMemHostUnregister((char *)h + 8), 1);
    EXPECT(cuMemFreeHost((char *)h + 8), 1);
    OK(cuMemHostGetFlags(&fl, h));
    CHECK(fl == 3, "flags of pinned PORTABLE|DEVICEMAP memory %u", fl);
    OK(cuMemFreeHost(h));
    OK(cuMemHostAlloc(&h, 4096, 0));
    OK(cuMemHostGetFlags(&fl, h));
    CHECK(fl == 2, "flags of pinned memory allocated without flags %u (DEVICEMAP)", fl);
    OK(cuMemFreeHost(h));
    OK(cuMemHostAlloc(&h, 0, 0));
    OK(cuMemFreeHost(h));
    OK(cuMemFree(0));
    CUdeviceptr d;
    EXPECT(cuMemAlloc(&d, 0), 1);
    OK(cuMemAlloc(&d, 64));
    EXPECT(cuMemFree(d + 8), 1);
    OK(cuMemFree(d));
    EXPECT(cuMemFree(d), 1);
    free(buf);
    free(other);
}

/* Two registrations side by side: a kernel may run over both, the driver's
 * copies and memsets only over one (CUDA_ERROR_INVALID_VALUE, as the H200
 * answered with driver 580). */
static void test_adjacent_registrations(void) {
    enum { HALF = 4096 };
    char *buf = page_alloc(2 * HALF), *tmp = page_alloc(2 * HALF);
    CUstream s;
    CUdeviceptr d, dp;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc(&d, 2 * HALF));
    OK(cuMemHostRegister(buf, HALF, 2 /* DEVICEMAP */));
    OK(cuMemHostRegister(buf + HALF, HALF, 2));
    OK(cuMemHostGetDevicePointer(&dp, buf, 0));

    EXPECT(cuMemcpyHtoD(d, buf, 2 * HALF), 1);
    EXPECT(cuMemcpyHtoD(d, buf + 100, HALF), 1);               /* starts in one, ends in the other */
    EXPECT(cuMemcpyHtoDAsync(d, buf, 2 * HALF, s), 1);
    EXPECT(cuMemcpyDtoH(buf, d, 2 * HALF), 1);
    EXPECT(cuMemsetD32(dp, 7, 2 * HALF / 4), 1);
    EXPECT(cuMemsetD32Async(dp + 100, 7, HALF / 4, s), 1);
    OK(cuStreamSynchronize(s));

    /* one registration at a time works */
    memset(buf, 0, 2 * HALF);
    OK(cuMemsetD32(dp, 9, HALF / 4));
    OK(cuMemsetD32Async(dp + HALF, 9, HALF / 4, s));
    OK(cuStreamSynchronize(s));
    CHECK(((int *)buf)[0] == 9 && ((int *)buf)[2 * HALF / 4 - 1] == 9, "memsets of each registration");
    OK(cuMemcpyHtoD(d, buf, HALF));
    OK(cuMemcpyHtoDAsync(d + HALF, buf + HALF, HALF, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, 2 * HALF / 4, 9), "copies of each registration to the device");
    OK(cuMemcpyHtoD(d, tmp, 2 * HALF));                        /* pageable: unchanged */

    /* a kernel reads and writes across the boundary */
    OK(add_one(s, dp, 2 * HALF / 4));
    OK(cuStreamSynchronize(s));
    int across = 1;
    for (int i = 0; i < 2 * HALF / 4; i++) across &= ((int *)buf)[i] == 10;
    CHECK(across, "add_one over two adjacent registrations");

    OK(cuMemHostUnregister(buf + HALF));
    OK(cuMemHostUnregister(buf));
    OK(cuMemFree(d));
    OK(cuStreamDestroy(s));
    free(buf);
    free(tmp);
}

/* cuMemHostUnregister and cuMemFree wait for work in flight on any stream;
 * meanwhile launches and registrations from other threads wait too, while
 * queries do not. */
struct fence_job { int which; void *arg; CUresult r; double done_ms; int done; };
static CUstream fence_stream;
static CUdeviceptr fence_buf;
static void *fence_thread(void *arg) {
    struct fence_job *j = arg;
    OK(cuCtxSetCurrent(ctx));
    if (j->which == 0) j->r = cuMemHostUnregister(j->arg);
    else if (j->which == 1) { sleep_ms(20); j->r = add_one(fence_stream, fence_buf, N); }
    else if (j->which == 2) { sleep_ms(20); j->r = cuMemHostRegister(j->arg, 4096, 0); }
    else if (j->which == 3) j->r = cuMemFree((CUdeviceptr)(uintptr_t)j->arg);
    else if (j->which == 4) { sleep_ms(20); j->r = cuStreamQuery(fence_stream); }
    else { sleep_ms(20); j->r = add_one(j->arg, fence_buf, N); }
    j->done_ms = now_ms();
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void test_fence(int free_not_unregister) {
    uint32_t *flags = page_alloc(4096);
    char *victim = page_alloc(4096), *late = page_alloc(4096);
    CUdeviceptr dvictim = 0;
    OK(cuMemHostRegister(flags, 4096, 0));
    OK(cuMemHostRegister(victim, 4096, 0));
    OK(cuMemAlloc(&dvictim, 64));
    CUstream busy;
    OK(cuStreamCreate(&busy, NON_BLOCKING));
    OK(cuStreamCreate(&fence_stream, NON_BLOCKING));
    OK(cuMemAlloc(&fence_buf, N * sizeof(int)));
    OK(cuMemsetD32(fence_buf, 0, N));
    OK(cuStreamWaitValue32(busy, (CUdeviceptr)(uintptr_t)flags, 1, WAIT_EQ));
    OK(spin(busy, 1000000));

    CUstream capturing;
    OK(cuStreamCreate(&capturing, NON_BLOCKING));
    OK(cuStreamBeginCapture(capturing, RELAXED));
    struct fence_job jobs[5] = {
        { free_not_unregister ? 3 : 0, free_not_unregister ? (void *)(uintptr_t)dvictim : victim, -1, 0, 0 },
        { 1, NULL, -1, 0, 0 },
        { 2, late, -1, 0, 0 },
        { 4, NULL, -1, 0, 0 },
        { 5, capturing, -1, 0, 0 },
    };
    pthread_t th[5];
    for (int i = 0; i < 5; i++) pthread_create(&th[i], NULL, fence_thread, &jobs[i]);
    sleep_ms(150);
    CHECK(!__atomic_load_n(&jobs[0].done, __ATOMIC_ACQUIRE), "%s returned while a stream was busy",
          free_not_unregister ? "cuMemFree" : "cuMemHostUnregister");
    CHECK(!__atomic_load_n(&jobs[1].done, __ATOMIC_ACQUIRE), "a launch returned during the fence");
    CHECK(!__atomic_load_n(&jobs[2].done, __ATOMIC_ACQUIRE), "cuMemHostRegister returned during the fence");
    CHECK(__atomic_load_n(&jobs[3].done, __ATOMIC_ACQUIRE), "cuStreamQuery waited for the fence");
    CHECK(__atomic_load_n(&jobs[4].done, __ATOMIC_ACQUIRE), "a launch into a capture waited for the fence");
    double release = now_ms();
    store32(flags, 1);
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    CHECK(jobs[0].r == 0 && jobs[1].r == 0 && jobs[2].r == 0 && jobs[3].r == 0 && jobs[4].r == 0,
          "fence results %d %d %d %d %d", jobs[0].r, jobs[1].r, jobs[2].r, jobs[3].r, jobs[4].r);
    CUgraph g;
    OK(cuStreamEndCapture(capturing, &g));
    OK(cuGraphDestroy(g));
    OK(cuStreamDestroy(capturing));
    CHECK(jobs[0].done_ms >= release && jobs[1].done_ms >= release && jobs[2].done_ms >= release,
          "fence, launch and register ended after the release");
    OK(cuStreamSynchronize(fence_stream));
    CHECK(all_equal(fence_buf, N, 1), "the held launch ran");

    if (!free_not_unregister) OK(cuMemFree(dvictim));
    else OK(cuMemHostUnregister(victim));
    OK(cuMemHostUnregister(late));
    OK(cuMemHostUnregister(flags));
    OK(cuMemFree(fence_buf));
    OK(cuStreamDestroy(busy));
    OK(cuStreamDestroy(fence_stream));
    free(flags); free(victim); free(late);
}

/* ===================================================================
 * Capture: the matrix of potentially unsafe calls
 * =================================================================== */

enum { U_QUERY_OTHER, U_QUERY_NULL, U_QUERY_PER_THREAD, U_SYNC_OTHER, U_SYNC_LEGACY, U_EVENT_QUERY, U_EVENT_SYNC,
       U_REGISTER, U_UNREGISTER, U_ALLOC, U_FREE, U_HOST_ALLOC, U_FREE_HOST, U_CTX_SYNC, U_COUNT };
static const char *unsafe_names[U_COUNT] = {
    "StreamQuery(other)", "StreamQuery(NULL)", "StreamQuery(PER_THREAD)", "StreamSynchronize(other)",
    "StreamSynchronize(LEGACY)", "EventQuery", "EventSynchronize", "MemHostRegister", "MemHostUnregister",
    "MemAlloc", "MemFree", "MemHostAlloc", "MemFreeHost", "CtxSynchronize",
};
enum { A_EVENT_RECORD = U_COUNT, A_STREAM_CREATE_DESTROY, A_EVENT_CREATE_DESTROY, A_HOST_GET_FLAGS, A_IS_CAPTURING,
       A_ASYNC_COPY, A_END };
static const char *allowed_names[] = { "EventRecord(other)", "StreamCreate+Destroy", "EventCreate+Destroy",
                                       "MemHostGetFlags", "StreamIsCapturing", "MemcpyHtoDAsync(other)" };

struct fixture {
    CUstream capturing, other;
    CUevent ev;
    char *reg, *fresh;
    CUdeviceptr dev, new_dev, work;
    void *host, *new_host;
};
static CUresult do_call(int u, struct fixture *f) {
    CUstream s;
    CUevent e;
    int st;
    unsigned fl;
    switch (u) {
    case U_QUERY_OTHER: return cuStreamQuery(f->other);
    case U_QUERY_NULL: return cuStreamQuery(NULL);
    case U_QUERY_PER_THREAD: return cuStreamQuery(PER_THREAD);
    case U_SYNC_OTHER: return cuStreamSynchronize(f->other);
    case U_SYNC_LEGACY: return cuStreamSynchronize(LEGACY);
    case U_EVENT_QUERY: return cuEventQuery(f->ev);
    case U_EVENT_SYNC: return cuEventSynchronize(f->ev);
    case U_REGISTER: return cuMemHostRegister(f->fresh, 4096, 0);
    case U_UNREGISTER: return cuMemHostUnregister(f->reg);
    case U_ALLOC: return cuMemAlloc(&f->new_dev, 256);
    case U_FREE: return cuMemFree(f->dev);
    case U_HOST_ALLOC: return cuMemHostAlloc(&f->new_host, 4096, 0);
    case U_FREE_HOST: return cuMemFreeHost(f->host);
    case U_CTX_SYNC: return cuCtxSynchronize();
    case A_EVENT_RECORD: return cuEventRecord(f->ev, f->other);
    case A_STREAM_CREATE_DESTROY: { CUresult r = cuStreamCreate(&s, 0); return r ? r : cuStreamDestroy(s); }
    case A_EVENT_CREATE_DESTROY: { CUresult r = cuEventCreate(&e, 0); return r ? r : cuEventDestroy(e); }
    case A_HOST_GET_FLAGS: return cuMemHostGetFlags(&fl, f->host);
    case A_IS_CAPTURING: { CUresult r = cuStreamIsCapturing(f->capturing, &st); return r ? r : st == 1 ? 0 : -1; }
    case A_ASYNC_COPY: return cuMemcpyHtoDAsync(f->work, f->reg, 64, f->other);
    }
    return -1;
}
static void fixture_setup(struct fixture *f) {
    memset(f, 0, sizeof *f);
    OK(cuStreamCreate(&f->capturing, NON_BLOCKING));
    OK(cuStreamCreate(&f->other, NON_BLOCKING));
    OK(cuEventCreate(&f->ev, 0));
    f->reg = page_alloc(4096);
    f->fresh = page_alloc(4096);
    OK(cuMemHostRegister(f->reg, 4096, 0));
    OK(cuMemAlloc(&f->dev, 256));
    OK(cuMemAlloc(&f->work, N * sizeof(int)));
    OK(cuMemHostAlloc(&f->host, 4096, 0));
    OK(add_one(f->other, f->work, N));
    OK(cuEventRecord(f->ev, f->other));
    OK(cuEventSynchronize(f->ev));
}
/* Undo whatever the call under test did or left. */
static void fixture_teardown(struct fixture *f, int u, CUresult r) {
    OK(cuCtxSynchronize());
    if (u == U_REGISTER && r == 0) OK(cuMemHostUnregister(f->fresh));
    if (!(u == U_UNREGISTER && r == 0)) OK(cuMemHostUnregister(f->reg));
    if (u == U_ALLOC && r == 0) OK(cuMemFree(f->new_dev));
    if (!(u == U_FREE && r == 0)) OK(cuMemFree(f->dev));
    if (u == U_HOST_ALLOC && r == 0) OK(cuMemFreeHost(f->new_host));
    if (!(u == U_FREE_HOST && r == 0)) OK(cuMemFreeHost(f->host));
    OK(cuMemFree(f->work));
    OK(cuEventDestroy(f->ev));
    OK(cuStreamDestroy(f->capturing));
    OK(cuStreamDestroy(f->other));
    free(f->reg);
    free(f->fresh);
}

struct job { int mode, u; struct fixture *f; CUresult r; };
static void *job_thread(void *arg) {
    struct job *j = arg;
    OK(cuCtxSetCurrent(ctx));
    set_mode(j->mode);
    j->r = do_call(j->u, j->f);
    set_mode(GLOBAL);
    return NULL;
}

static const struct situation {
    const char *name;
    int other_thread, capture_mode, thread_mode, all_refused;
} situations[] = {
    { "other thread GLOBAL,       capture GLOBAL      ", 1, GLOBAL, GLOBAL, 1 },
    { "other thread RELAXED,      capture GLOBAL      ", 1, GLOBAL, RELAXED, 0 },
    { "other thread THREAD_LOCAL, capture GLOBAL      ", 1, GLOBAL, THREAD_LOCAL, 0 },
    { "other thread GLOBAL,       capture THREAD_LOCAL", 1, THREAD_LOCAL, GLOBAL, 0 },
    { "other thread GLOBAL,       capture RELAXED     ", 1, RELAXED, GLOBAL, 0 },
    { "same thread GLOBAL,        capture GLOBAL      ", 0, GLOBAL, GLOBAL, 1 },
    { "same thread GLOBAL,        capture THREAD_LOCAL", 0, THREAD_LOCAL, GLOBAL, 1 },
    { "same thread RELAXED,       capture GLOBAL      ", 0, GLOBAL, RELAXED, 0 },
    { "same thread GLOBAL,        capture RELAXED     ", 0, RELAXED, GLOBAL, 0 },
};

/* One cell: begin a capture with one kernel, make the call, end the capture. */
static void run_cell(const struct situation *sit, int u, char *cell) {
    struct fixture f;
    fixture_setup(&f);
    OK(cuStreamBeginCapture(f.capturing, sit->capture_mode));
    OK(add_one(f.capturing, f.work, N));
    CUresult r;
    if (sit->other_thread) {
        struct job j = { sit->thread_mode, u, &f, -1 };
        pthread_t th;
        pthread_create(&th, NULL, job_thread, &j);
        pthread_join(th, NULL);
        r = j.r;
    } else {
        set_mode(sit->thread_mode);
        r = do_call(u, &f);
        set_mode(GLOBAL);
    }
    CUgraph g = (CUgraph)1;
    CUresult end = cuStreamEndCapture(f.capturing, &g);
    int refused = u < U_COUNT && (sit->all_refused || u == U_CTX_SYNC);
    CHECK(r == (refused ? 900 : 0) && end == (refused ? 901 : 0),
          "%s | %s: call %d end %d, want %d %d", sit->name, u < U_COUNT ? unsafe_names[u] : allowed_names[u - U_COUNT],
          r, end, refused ? 900 : 0, refused ? 901 : 0);
    if (end == 901) CHECK(g == NULL, "invalidated capture gave a graph");
    if (end == 0 && g) OK(cuGraphDestroy(g));
    sprintf(cell, "%d/%d", r, end);
    fixture_teardown(&f, u, r);
}

static void test_capture_matrix(void) {
    char cell[32];
    printf("capture matrix: call result / end-capture result\n%-50s", "");
    for (int u = 0; u < U_COUNT; u++) printf(" %.9s", unsafe_names[u]);
    printf("\n");
    for (size_t i = 0; i < sizeof situations / sizeof situations[0]; i++) {
        printf("%-50s", situations[i].name);
        for (int u = 0; u < U_COUNT; u++) {
            run_cell(&situations[i], u, cell);
            printf(" %9s", cell);
        }
        printf("\n");
    }
    printf("allowed during another thread's GLOBAL capture:");
    for (int a = A_EVENT_RECORD; a < A_END; a++) {
        run_cell(&situations[0], a, cell);
        printf(" %s %s", allowed_names[a - U_COUNT], cell);
    }
    printf("\n");
}

/* ===================================================================
 * Capture: other rules
 * =================================================================== */

static CUstream wrong_thread_stream;
static void *end_from_other_thread(void *arg) {
    CUgraph g = NULL;
    OK(cuCtxSetCurrent(ctx));
    *(CUresult *)arg = cuStreamEndCapture(wrong_thread_stream, &g);
    return NULL;
}
static void *query_from_other_thread(void *arg) {
    OK(cuCtxSetCurrent(ctx));
    *(CUresult *)arg = cuStreamQuery(NULL);
    return NULL;
}

static void test_capture_rules(void) {
    CUstream cs, bs, s2;
    CUdeviceptr d;
    CUgraph g;
    CUevent e1, e2, outside;
    int st = -1;
    OK(cuStreamCreate(&cs, NON_BLOCKING));
    OK(cuStreamCreate(&bs, 0));
    OK(cuStreamCreate(&s2, NON_BLOCKING));
    OK(cuEventCreate(&e1, 0));
    OK(cuEventCreate(&e2, 0));
    OK(cuEventCreate(&outside, 0));
    OK(cuMemAlloc(&d, N * sizeof(int)));
    OK(cuMemsetD32(d, 0, N));

    /* no capture on the legacy stream */
    EXPECT(cuStreamBeginCapture(NULL, GLOBAL), 900);
    EXPECT(cuStreamBeginCapture(LEGACY, GLOBAL), 900);
    /* begin twice (the capture goes on), end without a capture */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    EXPECT(cuStreamBeginCapture(cs, GLOBAL), 401);
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 1, "status after a second begin %d", st);
    OK(add_one(cs, d, N));
    OK(cuStreamEndCapture(cs, &g));
    OK(cuGraphDestroy(g));
    EXPECT(cuStreamEndCapture(cs, &g), 401);

    /* captured work does not run; capture info */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 1, "capturing status %d", st);
    OK(add_one(cs, d, N));
    unsigned long long id = 0;
    CUgraph ig = NULL;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 99;
    OK(cuStreamGetCaptureInfo(cs, &st, &id, &ig, &deps, NULL, &ndeps));
    CHECK(st == 1 && id != 0 && ig != NULL && ndeps == 1 && deps && deps[0], "capture info %d %llu %p %zu", st, id,
          (void *)ig, ndeps);
    OK(cuStreamEndCapture(cs, &g));
    CHECK(all_equal(d, N, 0), "captured kernel did not run");
    size_t count = 0;
    OK(cuGraphGetNodes(g, NULL, &count));
    CHECK(count == 1, "captured nodes %zu", count);
    OK(cuGraphDestroy(g));
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 0, "status after end %d", st);

    /* ending a GLOBAL capture from another thread */
    wrong_thread_stream = cs;
    OK(cuStreamBeginCapture(cs, GLOBAL));
    CUresult r = -1;
    pthread_t th;
    pthread_create(&th, NULL, end_from_other_thread, &r);
    pthread_join(th, NULL);
    CHECK(r == 908, "end from another thread %d", r);
    EXPECT(cuStreamEndCapture(cs, &g), 401); /* the refused end ended the capture */
    /* a RELAXED capture may be ended by any thread */
    OK(cuStreamBeginCapture(cs, RELAXED));
    pthread_create(&th, NULL, end_from_other_thread, &r);
    pthread_join(th, NULL);
    CHECK(r == 0, "end of a relaxed capture from another thread %d", r);

    /* an event recorded in a capture: 907 (invalidating the capture) while it
     * is live, 1 once it is invalidated or over */
    OK(cuStreamBeginCapture(cs, RELAXED));
    OK(add_one(cs, d, N));
    OK(cuEventRecord(e1, cs));
    set_mode(RELAXED);
    EXPECT(cuEventQuery(e1), 907);
    EXPECT(cuEventSynchronize(e1), 1);
    set_mode(GLOBAL);
    EXPECT(cuStreamEndCapture(cs, &g), 901);
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuEventRecord(e1, cs));
    EXPECT(cuEventSynchronize(e1), 907); /* before the unsafe-call rule */
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 2, "a captured event's synchronize invalidated the capture: %d", st);
    EXPECT(cuStreamEndCapture(cs, &g), 901);
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuEventRecord(e1, cs));
    OK(cuStreamEndCapture(cs, &g));
    OK(cuGraphDestroy(g));
    EXPECT(cuEventQuery(e1), 1);
    EXPECT(cuEventSynchronize(e1), 1);
    EXPECT(cuStreamWaitEvent(s2, e1, 0), 1);
    EXPECT(cuStreamWaitEvent(s2, outside, 1 /* WAIT_EXTERNAL */), 401); /* only for captures */

    /* destroying a capturing stream ends its capture */
    CUstream doomed;
    OK(cuStreamCreate(&doomed, NON_BLOCKING));
    OK(cuStreamBeginCapture(doomed, GLOBAL));
    OK(add_one(doomed, d, N));
    OK(cuStreamDestroy(doomed));
    pthread_t th0;
    CUresult r0 = -1;
    pthread_create(&th0, NULL, query_from_other_thread, &r0);
    pthread_join(th0, NULL);
    CHECK(r0 == 0, "a global-mode query after the capturing stream was destroyed: %d", r0);

    /* the legacy stream during a blocking stream's capture */
    OK(cuStreamBeginCapture(bs, GLOBAL));
    EXPECT(cuStreamIsCapturing(NULL, &st), 906);
    OK(add_one(bs, d, N));
    OK(cuStreamEndCapture(bs, &g)); /* asking did not invalidate */
    OK(cuGraphDestroy(g));
    OK(cuStreamBeginCapture(bs, GLOBAL));
    OK(add_one(bs, d, N));
    EXPECT(add_one(NULL, d, N), 906);
    EXPECT(cuStreamEndCapture(bs, &g), 901);
    CHECK(g == NULL, "no graph from an invalidated capture");

    /* work on an invalidated capture */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    pthread_create(&th, NULL, query_from_other_thread, &r);
    pthread_join(th, NULL);
    CHECK(r == 900, "query from another thread during a global capture %d", r);
    EXPECT(add_one(cs, d, N), 901);
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 2, "status of an invalidated capture %d", st);
    EXPECT(cuStreamEndCapture(cs, &g), 901);
    OK(cuStreamIsCapturing(cs, &st));
    CHECK(st == 0, "status after ending an invalidated capture %d", st);

    /* fork and join through events */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuEventRecord(e1, cs));
    OK(cuStreamWaitEvent(s2, e1, 0));
    OK(cuStreamIsCapturing(s2, &st));
    CHECK(st == 1, "forked stream is capturing: %d", st);
    OK(add_one(s2, d, N));
    OK(cuEventRecord(e2, s2));
    OK(cuStreamWaitEvent(cs, e2, 0));
    OK(add_one(cs, d, N));
    OK(cuStreamEndCapture(cs, &g));
    OK(cuGraphGetNodes(g, NULL, &count));
    CHECK(count == 3, "fork/join nodes %zu", count);
    OK(cuStreamIsCapturing(s2, &st));
    CHECK(st == 0, "joined stream left the capture: %d", st);
    CUgraphExec x;
    OK(cuGraphInstantiate(&x, g, 0));
    OK(cuGraphLaunch(x, s2));
    OK(cuStreamSynchronize(s2));
    CHECK(all_equal(d, N, 3), "fork/join graph ran all three kernels");
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
    /* not joined back */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuEventRecord(e1, cs));
    OK(cuStreamWaitEvent(s2, e1, 0));
    OK(add_one(s2, d, N));
    EXPECT(cuStreamEndCapture(cs, &g), 904);
    OK(cuStreamIsCapturing(s2, &st));
    CHECK(st == 0, "unjoined stream left the capture: %d", st);

    /* a capturing stream waiting for work outside the capture */
    OK(cuEventRecord(outside, s2));
    OK(cuStreamSynchronize(s2));
    OK(cuStreamBeginCapture(cs, GLOBAL));
    EXPECT(cuStreamWaitEvent(cs, outside, 0), 905);
    EXPECT(cuStreamEndCapture(cs, &g), 901);

    OK(cuStreamSynchronize(NULL));
    OK(cuEventDestroy(e1));
    OK(cuEventDestroy(e2));
    OK(cuEventDestroy(outside));
    OK(cuStreamDestroy(cs));
    OK(cuStreamDestroy(bs));
    OK(cuStreamDestroy(s2));
    OK(cuMemFree(d));
}

/* ===================================================================
 * Graphs
 * =================================================================== */

static CUgraph capture_fill(CUstream cs, CUdeviceptr d, int value, int extra_add) {
    CUgraph g = NULL;
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(fill(cs, d, N, value));
    if (extra_add) OK(add_one(cs, d, N));
    OK(cuStreamEndCapture(cs, &g));
    return g;
}

static void test_graphs(void) {
    CUstream cs, s;
    CUdeviceptr d;
    CUgraph g;
    CUgraphExec x;
    OK(cuStreamCreate(&cs, NON_BLOCKING));
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc(&d, N * sizeof(int)));
    OK(cuMemsetD32(d, 10, N));

    /* replay */
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuStreamEndCapture(cs, &g));
    OK(cuGraphInstantiate(&x, g, 0));
    OK(cuGraphUpload(x, s));
    CHECK(all_equal(d, N, 10), "instantiate and upload ran nothing");
    for (int i = 0; i < 3; i++) OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 13), "three launches of add_one");
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));

    /* update in place */
    CUgraph g7 = capture_fill(cs, d, 7, 0), g9 = capture_fill(cs, d, 9, 0);
    UpdateInfo info = { -1, NULL, NULL };
    OK(cuGraphInstantiate(&x, g7, 0));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 7), "fill 7");
    OK(cuGraphExecUpdate(x, g9, &info));
    CHECK(info.result == 0, "update result %d", info.result);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 9), "fill 9 after update");
    /* a different shape */
    CUgraph g2 = capture_fill(cs, d, 1, 1);
    EXPECT(cuGraphExecUpdate(x, g2, &info), 910);
    CHECK(info.result == 2, "update of a larger graph: result %d", info.result);
    /* a different node type */
    CUgraph gm;
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(cuMemsetD32Async(d, 4, N, cs));
    OK(cuStreamEndCapture(cs, &gm));
    EXPECT(cuGraphExecUpdate(x, gm, &info), 910);
    CHECK(info.result == 3, "update with a memset for a kernel: result %d", info.result);
    /* another kernel in the same place */
    CUgraph ga;
    OK(cuStreamBeginCapture(cs, GLOBAL));
    OK(add_one(cs, d, N));
    OK(cuStreamEndCapture(cs, &ga));
    OK(cuGraphExecUpdate(x, ga, &info));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 10), "add_one after updating fill to add_one");
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g7)); OK(cuGraphDestroy(g9)); OK(cuGraphDestroy(g2)); OK(cuGraphDestroy(gm)); OK(cuGraphDestroy(ga));

    /* a graph launched while its stream is held runs later, in order */
    uint32_t *flags = page_alloc(4096);
    OK(cuMemHostRegister(flags, 4096, 0));
    g = capture_fill(cs, d, 5, 1);
    OK(cuGraphInstantiate(&x, g, 0));
    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)flags, 1, WAIT_EQ));
    OK(cuGraphLaunch(x, s));
    sleep_ms(10);
    EXPECT(cuStreamQuery(s), 600);
    store32(flags, 1);
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(d, N, 6), "held graph launch ran fill then add_one");
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
    OK(cuMemHostUnregister(flags));
    free(flags);

    OK(cuStreamDestroy(cs));
    OK(cuStreamDestroy(s));
    OK(cuMemFree(d));
}

/* ===================================================================
 * Simulator hooks: fault injection, counters, illegal addresses
 * =================================================================== */

static void test_hooks(void) {
    CUdeviceptr d;
    CUstream s;
    CHECK(sim_fail_next("cuMemAlloc", 2, 2) == 0, "sim_fail_next");
    long long allocs = sim_stat("live_allocations");
    EXPECT(cuMemAlloc(&d, 64), 2);
    EXPECT(cuMemAlloc(&d, 64), 2);
    CHECK(sim_stat("live_allocations") == allocs, "failed allocations allocated nothing");
    OK(cuMemAlloc(&d, 64));
    CHECK(sim_stat("live_allocations") == allocs + 1, "live_allocations");
    OK(cuMemFree(d));

    long long unreg = sim_stat("unregister_calls");
    CHECK(sim_fail_next("cuMemHostUnregister", 1, 999) == 0, "sim_fail_next");
    EXPECT(cuMemHostUnregister(NULL), 999);
    EXPECT(cuMemHostUnregister(NULL), 1);
    CHECK(sim_stat("unregister_calls") == unreg + 2, "unregister_calls counts every call");
    CHECK(sim_fail_after && sim_fail_after("cuMemHostUnregister", 2, 1, 998) == 0, "sim_fail_after");
    EXPECT(cuMemHostUnregister(NULL), 1);                       /* skipped: works as usual */
    EXPECT(cuMemHostUnregister(NULL), 1);
    EXPECT(cuMemHostUnregister(NULL), 998);
    EXPECT(cuMemHostUnregister(NULL), 1);

    long long streams = sim_stat("live_streams"), events = sim_stat("live_events");
    CUevent e;
    OK(cuStreamCreate(&s, 0));
    OK(cuEventCreate(&e, 0));
    CHECK(sim_stat("live_streams") == streams + 1 && sim_stat("live_events") == events + 1, "live streams/events");
    OK(cuStreamBeginCapture(s, GLOBAL));
    CHECK(sim_stat("active_captures") == 1, "active_captures %lld", sim_stat("active_captures"));
    long long inval = sim_stat("captures_invalidated");
    EXPECT(cuStreamSynchronize(NULL), 900);
    CHECK(sim_stat("captures_invalidated") == inval + 1, "captures_invalidated");
    CUgraph g;
    EXPECT(cuStreamEndCapture(s, &g), 901);
    CHECK(sim_stat("active_captures") == 0, "active_captures after end");
    OK(cuStreamDestroy(s));
    OK(cuEventDestroy(e));
    CHECK(sim_stat("live_streams") == streams && sim_stat("live_events") == events, "live streams/events after");
    CHECK(sim_stat("no_such_counter") == -1, "unknown counter");

    /* a kernel on memory the device cannot reach faults its context */
    CUcontext c2, popped;
    OK(cuCtxCreate(&c2, NULL, 0, 0));
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, fake_ptx));
    OK(cuModuleGetFunction(&f, m, "add_one_i32"));
    int *pageable = calloc(N, sizeof(int));
    CUdeviceptr pd = (CUdeviceptr)(uintptr_t)pageable;
    unsigned long long n = N;
    void *args[] = { &pd, &n };
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT(cuCtxSynchronize(), 700);
    EXPECT(cuStreamCreate(&s, 0), 700);
    CHECK(pageable[0] == 0, "the faulting kernel did not run");
    CHECK(sim_stat("illegal_addresses") >= 1, "illegal_addresses");
    OK(cuCtxDestroy(c2));
    OK(cuCtxGetCurrent(&popped));
    CHECK(popped == ctx, "destroying the created context made the primary current again");
    free(pageable);
}

/* ===================================================================
 * main
 * =================================================================== */

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBRARY [KERNELS.ptx]\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
    cuGetProcAddress = (CUresult (*)(const char *, void **, int, unsigned long long, int *))dlsym(lib, "cuGetProcAddress_v2");
    if (!cuGetProcAddress) { fprintf(stderr, "no cuGetProcAddress_v2\n"); return 2; }
    sim_fail_next = (int (*)(const char *, int, int))dlsym(lib, "sim_fail_next");
    sim_fail_after = (int (*)(const char *, int, int, int))dlsym(lib, "sim_fail_after");
    sim_stat = (long long (*)(const char *))dlsym(lib, "sim_stat");
    if (!sim_stat && argc < 3) { fprintf(stderr, "the real driver needs a PTX file with the kernels\n"); return 2; }

    LOAD(cuInit, "cuInit", 2000);
    LOAD(cuDriverGetVersion, "cuDriverGetVersion", 2020);
    LOAD(cuDeviceGet, "cuDeviceGet", 2000);
    LOAD(cuDeviceGetCount, "cuDeviceGetCount", 2000);
    LOAD(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000);
    LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000);
    LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000);
    LOAD(cuCtxSetCurrent, "cuCtxSetCurrent", 4000);
    LOAD(cuCtxGetCurrent, "cuCtxGetCurrent", 4000);
    LOAD(cuCtxGetDevice, "cuCtxGetDevice", 2000);
    LOAD(cuCtxCreate, "cuCtxCreate", 12050);
    LOAD(cuCtxDestroy, "cuCtxDestroy", 4000);
    LOAD(cuCtxSynchronize, "cuCtxSynchronize", 2000);
    LOAD(cuStreamCreate, "cuStreamCreate", 2000);
    LOAD(cuStreamDestroy, "cuStreamDestroy", 4000);
    LOAD(cuStreamQuery, "cuStreamQuery", 2000);
    LOAD(cuStreamSynchronize, "cuStreamSynchronize", 2000);
    LOAD(cuStreamGetFlags, "cuStreamGetFlags", 5050);
    LOAD(cuStreamWaitEvent, "cuStreamWaitEvent", 3020);
    LOAD(cuStreamBeginCapture, "cuStreamBeginCapture", 10010);
    LOAD(cuStreamEndCapture, "cuStreamEndCapture", 10000);
    LOAD(cuStreamIsCapturing, "cuStreamIsCapturing", 10000);
    LOAD(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo", 12030);
    LOAD(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", 10010);
    LOAD(cuStreamWaitValue32, "cuStreamWaitValue32", 11070);
    LOAD(cuStreamWriteValue32, "cuStreamWriteValue32", 11070);
    LOAD(cuStreamWaitValue64, "cuStreamWaitValue64", 11070);
    LOAD(cuStreamWriteValue64, "cuStreamWriteValue64", 11070);
    LOAD(cuEventCreate, "cuEventCreate", 2000);
    LOAD(cuEventRecord, "cuEventRecord", 2000);
    LOAD(cuEventQuery, "cuEventQuery", 2000);
    LOAD(cuEventSynchronize, "cuEventSynchronize", 2000);
    LOAD(cuEventDestroy, "cuEventDestroy", 4000);
    LOAD(cuEventElapsedTime, "cuEventElapsedTime", 12080);
    LOAD(cuMemAlloc, "cuMemAlloc", 3020);
    LOAD(cuMemFree, "cuMemFree", 3020);
    LOAD(cuMemHostAlloc, "cuMemHostAlloc", 2020);
    LOAD(cuMemFreeHost, "cuMemFreeHost", 2000);
    LOAD(cuMemHostRegister, "cuMemHostRegister", 6050);
    LOAD(cuMemHostUnregister, "cuMemHostUnregister", 4000);
    LOAD(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer", 3020);
    LOAD(cuMemHostGetFlags, "cuMemHostGetFlags", 2030);
    LOAD(cuPointerGetAttribute, "cuPointerGetAttribute", 4000);
    LOAD(cuMemcpyHtoD, "cuMemcpyHtoD", 3020);
    LOAD(cuMemcpyDtoH, "cuMemcpyDtoH", 3020);
    LOAD(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020);
    LOAD(cuMemsetD32, "cuMemsetD32", 3020);
    LOAD(cuMemsetD32Async, "cuMemsetD32Async", 3020);
    LOAD(cuModuleLoadData, "cuModuleLoadData", 2000);
    LOAD(cuModuleUnload, "cuModuleUnload", 2000);
    LOAD(cuModuleGetFunction, "cuModuleGetFunction", 2000);
    LOAD(cuLaunchKernel, "cuLaunchKernel", 4000);
    LOAD(cuGraphGetNodes, "cuGraphGetNodes", 10000);
    LOAD(cuGraphInstantiate, "cuGraphInstantiateWithFlags", 11040);
    LOAD(cuGraphLaunch, "cuGraphLaunch", 10000);
    LOAD(cuGraphUpload, "cuGraphUpload", 11010);
    LOAD(cuGraphExecUpdate, "cuGraphExecUpdate", 12000);
    LOAD(cuGraphDestroy, "cuGraphDestroy", 10000);
    LOAD(cuGraphExecDestroy, "cuGraphExecDestroy", 10000);
    LOAD(cuGetErrorName, "cuGetErrorName", 6000);
    if (failures) return 1;

#define RUN(call) do { if (getenv("SIM_SELFTEST_VERBOSE")) printf("== %s\n", #call); call; } while (0)
    RUN(test_proc_address_and_init());
    RUN(load_kernels(sim_stat ? NULL : argv[2]));
    RUN(test_kernels_and_copies());
    RUN(test_wait_value());
    RUN(test_legacy_stream());
    RUN(test_event_after_stream_destroy());
    RUN(test_per_thread_stream());
    RUN(test_registration());
    RUN(test_adjacent_registrations());
    RUN(test_fence(0));
    RUN(test_fence(1));
    RUN(test_capture_matrix());
    RUN(test_capture_rules());
    RUN(test_graphs());
    if (sim_stat) RUN(test_hooks());
    OK(cuModuleUnload(module));
    OK(cuDevicePrimaryCtxRelease(0));

    printf("%s: %d checks, %d failed (%s)\n", failures ? "FAIL" : "ok", checks, failures,
           sim_stat ? "simulator" : "real driver");
    return failures ? 1 : 0;
}
