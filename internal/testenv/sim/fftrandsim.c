/*
 * fftrandsim.c: a CPU stand-in for the parts of cuRAND and cuFFT that
 * purecuda's packages curand and cufft call, for their tests without a
 * GPU. A test fixture, not a library: cuRAND's numbers here are a plain
 * deterministic stream (splitmix64 of seed and position), not cuRAND's;
 * cuFFT's transforms are a plain DFT (exact up to rounding on small
 * sizes). Status codes and the argument rules the tests check are the
 * libraries' own.
 *
 * Build (internal/testenv/fftrand_linux.go does it), linked with the
 * driver simulator so that it shares that simulator's state:
 *
 *     cc -O2 -shared -fPIC -pthread -o libfftrandsim.so fftrandsim.c /path/libcudasim.so -lm
 *
 * The simulator's device memory is host memory (see sim.c), so the work
 * reads and writes device pointers directly. It runs in stream order, as a
 * host function on the generator's or plan's stream, and is captured into
 * graphs like any other work; work submitted during a capture is kept for
 * the graph's launches.
 *
 * Test hooks: long long fftrandsim_stat(const char *name): "generators"
 * and "plans" (live), "calls" (work submitted), "work_area" (the last work
 * area set, as an address), "auto_allocation" (the last plan's setting),
 * "exec_without_work_area"; -1 if unknown.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *userData);
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *user);
CUresult cuStreamIsCapturing(CUstream h, int *status);

#ifdef _WIN32
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long st_generators, st_plans, st_calls, st_work_area, st_auto_allocation = 1, st_exec_without_work_area;

EXPORT long long fftrandsim_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&mu);
    if (!strcmp(name, "generators")) v = st_generators;
    else if (!strcmp(name, "plans")) v = st_plans;
    else if (!strcmp(name, "calls")) v = st_calls;
    else if (!strcmp(name, "work_area")) v = st_work_area;
    else if (!strcmp(name, "auto_allocation")) v = st_auto_allocation;
    else if (!strcmp(name, "exec_without_work_area")) v = st_exec_without_work_area;
    pthread_mutex_unlock(&mu);
    return v;
}

/* A task runs on the stream; keep: captured, the graph runs it again. */
struct task {
    void (*fn)(struct task *);
    int keep;
    /* cuRAND */
    int kind; /* 0 uint32, 1 uint64, 2 uniform, 3 normal, 4 lognormal, 5 poisson */
    int dbl;
    void *out;
    size_t n;
    uint64_t seed, offset;
    double a, b;
    /* cuFFT */
    struct plan *plan;
    const void *in;
    void *fout;
    int dir;
    int type;
};

static void run(void *p) {
    struct task *t = p;
    t->fn(t);
    if (!t->keep) free(t);
}

static int submit(CUstream s, struct task *t) {
    int status = 0;
    if (s && cuStreamIsCapturing(s, &status) == 0 && status != 0) t->keep = 1;
    pthread_mutex_lock(&mu);
    st_calls++;
    pthread_mutex_unlock(&mu);
    if (cuLaunchHostFunc(s, run, t) != 0) {
        free(t);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- cuRAND */

enum {
    CURAND_STATUS_SUCCESS = 0, CURAND_STATUS_NOT_INITIALIZED = 101, CURAND_STATUS_TYPE_ERROR = 103,
    CURAND_STATUS_OUT_OF_RANGE = 104, CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105, CURAND_STATUS_LAUNCH_FAILURE = 201
};

struct gen {
    int live, type;
    uint64_t seed, offset;
    unsigned dims;
    CUstream stream;
};

static int pseudo(int type) { return type >= 100 && type < 200; }

EXPORT int curandGetVersion(int *v) { *v = 10400; return 0; }

EXPORT int curandCreateGenerator(struct gen **g, int type) {
    if (!g) return CURAND_STATUS_NOT_INITIALIZED;
    if (!(type == 100 || type == 101 || type == 121 || type == 141 || type == 142 || type == 161 ||
          (type >= 200 && type <= 204)))
        return CURAND_STATUS_TYPE_ERROR;
    struct gen *x = calloc(1, sizeof *x);
    x->live = 1;
    x->type = type;
    x->dims = 1;
    *g = x;
    pthread_mutex_lock(&mu);
    st_generators++;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int curandDestroyGenerator(struct gen *g) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    g->live = 0; /* kept, so that a use after destroy is seen */
    pthread_mutex_lock(&mu);
    st_generators--;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int curandSetStream(struct gen *g, CUstream s) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    g->stream = s;
    return 0;
}

EXPORT int curandSetPseudoRandomGeneratorSeed(struct gen *g, unsigned long long seed) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    if (!pseudo(g->type)) return CURAND_STATUS_TYPE_ERROR;
    g->seed = seed;
    g->offset = 0;
    return 0;
}

EXPORT int curandSetGeneratorOffset(struct gen *g, unsigned long long off) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    g->offset = off;
    return 0;
}

EXPORT int curandSetGeneratorOrdering(struct gen *g, int order) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    if (pseudo(g->type) ? (order < 100 || order > 104) : order != 201) return CURAND_STATUS_OUT_OF_RANGE;
    return 0;
}

EXPORT int curandSetQuasiRandomGeneratorDimensions(struct gen *g, unsigned dims) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    if (pseudo(g->type)) return CURAND_STATUS_TYPE_ERROR;
    if (dims < 1 || dims > 20000) return CURAND_STATUS_OUT_OF_RANGE;
    g->dims = dims;
    return 0;
}

static uint64_t mix(uint64_t seed, uint64_t i) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unit(uint64_t seed, uint64_t i) { return ((mix(seed, i) >> 11) + 1) * (1.0 / 9007199254740992.0); }

static void run_rand(struct task *t) {
    for (size_t i = 0; i < t->n; i++) {
        uint64_t k = t->offset + i;
        double v = 0;
        switch (t->kind) {
        case 0: ((uint32_t *)t->out)[i] = (uint32_t)mix(t->seed, k); continue;
        case 1: ((uint64_t *)t->out)[i] = mix(t->seed, k); continue;
        case 2: v = unit(t->seed, k); break;
        case 3: case 4: {
            uint64_t pair = k & ~1ull;
            double r = sqrt(-2 * log(unit(t->seed, pair))), th = 2 * M_PI * unit(t->seed, pair + 1);
            v = t->a + t->b * ((k & 1) ? r * sin(th) : r * cos(th));
            if (t->kind == 4) v = exp(v);
            break;
        }
        case 5: { /* Knuth's method: a count, not cuRAND's */
            double l = exp(-t->a), p = 1;
            uint32_t c = 0;
            for (uint64_t j = 0;; j++) {
                p *= unit(t->seed ^ 0x5555, k * 64 + j);
                if (p <= l || j == 63) break;
                c++;
            }
            ((uint32_t *)t->out)[i] = c;
            continue;
        }
        }
        if (t->dbl) ((double *)t->out)[i] = v;
        else ((float *)t->out)[i] = (float)v;
    }
}

static int gen_submit(struct gen *g, int kind, int dbl, void *out, size_t n, double a, double b) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    int is64 = g->type == 203 || g->type == 204;
    if (kind == 0 && is64) return CURAND_STATUS_TYPE_ERROR;
    if (kind == 1 && !is64) return CURAND_STATUS_TYPE_ERROR;
    if (pseudo(g->type) && (kind == 3 || kind == 4) && n % 2) return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
    if (!pseudo(g->type) && n % g->dims) return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
    if (n == 0) return 0;
    struct task *t = calloc(1, sizeof *t);
    t->fn = run_rand;
    t->kind = kind;
    t->dbl = dbl;
    t->out = out;
    t->n = n;
    t->seed = g->seed;
    t->offset = g->offset;
    t->a = a;
    t->b = b;
    g->offset += n;
    return submit(g->stream, t) ? CURAND_STATUS_LAUNCH_FAILURE : 0;
}

EXPORT int curandGenerate(struct gen *g, unsigned *out, size_t n) { return gen_submit(g, 0, 0, out, n, 0, 0); }
EXPORT int curandGenerateLongLong(struct gen *g, unsigned long long *out, size_t n) { return gen_submit(g, 1, 0, out, n, 0, 0); }
EXPORT int curandGenerateUniform(struct gen *g, float *out, size_t n) { return gen_submit(g, 2, 0, out, n, 0, 0); }
EXPORT int curandGenerateUniformDouble(struct gen *g, double *out, size_t n) { return gen_submit(g, 2, 1, out, n, 0, 0); }
EXPORT int curandGenerateNormal(struct gen *g, float *out, size_t n, float mean, float sd) { return gen_submit(g, 3, 0, out, n, mean, sd); }
EXPORT int curandGenerateNormalDouble(struct gen *g, double *out, size_t n, double mean, double sd) { return gen_submit(g, 3, 1, out, n, mean, sd); }
EXPORT int curandGenerateLogNormal(struct gen *g, float *out, size_t n, float mean, float sd) { return gen_submit(g, 4, 0, out, n, mean, sd); }
EXPORT int curandGenerateLogNormalDouble(struct gen *g, double *out, size_t n, double mean, double sd) { return gen_submit(g, 4, 1, out, n, mean, sd); }
EXPORT int curandGeneratePoisson(struct gen *g, unsigned *out, size_t n, double lambda) {
    if (!(lambda > 0)) return CURAND_STATUS_OUT_OF_RANGE;
    return gen_submit(g, 5, 0, out, n, lambda, 0);
}
