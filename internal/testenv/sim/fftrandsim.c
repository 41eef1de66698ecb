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
 * Test hooks: int fftrandsim_generator_live(void *g) and
 * fftrandsim_plan_live(int plan): 1 while made and not destroyed;
 * long long fftrandsim_stat(const char *name): "generators"
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
    /* cuFFT: a copy of the plan as it was when the work was submitted, so
     * that a plan destroyed (and its slot reused) before the work runs
     * does not change it */
    struct plan *plan;
    const void *in;
    void *fout;
    int dir;
    int type;
};

static void run(void *p) {
    struct task *t = p;
    t->fn(t);
    if (!t->keep) {
        free(t->plan);
        free(t);
    }
}

static int submit(CUstream s, struct task *t) {
    int status = 0;
    if (s && cuStreamIsCapturing(s, &status) == 0 && status != 0) t->keep = 1;
    pthread_mutex_lock(&mu);
    st_calls++;
    pthread_mutex_unlock(&mu);
    if (cuLaunchHostFunc(s, run, t) != 0) {
        free(t->plan);
        free(t);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- cuRAND */

enum {
    CURAND_STATUS_SUCCESS = 0, CURAND_STATUS_NOT_INITIALIZED = 101, CURAND_STATUS_ALLOCATION_FAILED = 102,
    CURAND_STATUS_TYPE_ERROR = 103,
    CURAND_STATUS_OUT_OF_RANGE = 104, CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105, CURAND_STATUS_LAUNCH_FAILURE = 201
};

struct gen {
    int live, type, host; /* host: curandCreateGeneratorHost's, which runs at once */
    uint64_t seed, offset;
    unsigned dims;
    CUstream stream;
    /* ready: the state is set up (curandGenerateSeeds, or a generate),
     * until a setter; as cuRAND, setting it up allocates device memory,
     * which fails inside a stream capture (ALLOCATION_FAILED). */
    int ready;
};

static int capturing(CUstream s) {
    int status = 0;
    return s && cuStreamIsCapturing(s, &status) == 0 && status != 0;
}

/* gen_setup sets the state up, as cuRAND at the first generate. */
static int gen_setup(struct gen *g) {
    if (g->ready || g->host) return 0;
    if (capturing(g->stream)) return CURAND_STATUS_ALLOCATION_FAILED;
    g->ready = 1;
    return 0;
}

EXPORT int fftrandsim_generator_live(struct gen *g) {
    pthread_mutex_lock(&mu);
    int live = g && g->live;
    pthread_mutex_unlock(&mu);
    return live;
}

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

EXPORT int curandCreateGeneratorHost(struct gen **g, int type) {
    int st = curandCreateGenerator(g, type);
    if (st == 0) (*g)->host = 1;
    return st;
}

EXPORT int curandDestroyGenerator(struct gen *g) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    pthread_mutex_lock(&mu);
    g->live = 0; /* kept, so that a use after destroy is seen */
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
    g->ready = 0;
    return 0;
}

EXPORT int curandSetGeneratorOffset(struct gen *g, unsigned long long off) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    g->offset = off;
    g->ready = 0;
    return 0;
}

EXPORT int curandSetGeneratorOrdering(struct gen *g, int order) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    if (pseudo(g->type) ? (order < 100 || order > 104) : order != 201) return CURAND_STATUS_OUT_OF_RANGE;
    g->ready = 0;
    return 0;
}

EXPORT int curandSetQuasiRandomGeneratorDimensions(struct gen *g, unsigned dims) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    if (pseudo(g->type)) return CURAND_STATUS_TYPE_ERROR;
    if (dims < 1 || dims > 20000) return CURAND_STATUS_OUT_OF_RANGE;
    g->dims = dims;
    g->ready = 0;
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
    int st = gen_setup(g);
    if (st) return st;
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
    if (g->host) {
        run(t);
        return 0;
    }
    return submit(g->stream, t) ? CURAND_STATUS_LAUNCH_FAILURE : 0;
}

EXPORT int curandGenerateSeeds(struct gen *g) {
    if (!g || !g->live) return CURAND_STATUS_NOT_INITIALIZED;
    return gen_setup(g);
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

/* ----------------------------------------------------------------- cuFFT */

enum {
    CUFFT_SUCCESS = 0, CUFFT_INVALID_PLAN = 1, CUFFT_INVALID_TYPE = 3, CUFFT_INVALID_VALUE = 4,
    CUFFT_EXEC_FAILED = 6, CUFFT_INVALID_SIZE = 8, CUFFT_NO_WORKSPACE = 0xD
};
enum { R2C = 0x2a, C2R = 0x2c, C2C = 0x29, D2Z = 0x6a, Z2D = 0x6c, Z2Z = 0x69 };

#define MAX_PLANS 4096

struct plan {
    int live, made, type, rank, auto_alloc;
    long long n[3], inembed[3], onembed[3], istride, idist, ostride, odist, batch;
    int basic_in, basic_out; /* no inembed/onembed: the default layout */
    void *work;
    CUstream stream;
};

static struct plan plans[MAX_PLANS];

EXPORT int cufftGetVersion(int *v) { *v = 12000; return 0; }

EXPORT int cufftCreate(int *h) {
    if (!h) return CUFFT_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_PLANS; i++) {
        if (!plans[i].live) {
            memset(&plans[i], 0, sizeof plans[i]);
            plans[i].live = 1;
            plans[i].auto_alloc = 1;
            st_plans++;
            *h = i;
            pthread_mutex_unlock(&mu);
            return 0;
        }
    }
    pthread_mutex_unlock(&mu);
    return CUFFT_INVALID_PLAN;
}

static struct plan *get_plan(int h) {
    if (h < 0 || h >= MAX_PLANS || !plans[h].live) return NULL;
    return &plans[h];
}

EXPORT int fftrandsim_plan_live(int h) {
    pthread_mutex_lock(&mu);
    int live = h >= 0 && h < MAX_PLANS && plans[h].live;
    pthread_mutex_unlock(&mu);
    return live;
}

EXPORT int cufftDestroy(int h) {
    struct plan *p = get_plan(h);
    if (!p) return CUFFT_INVALID_PLAN;
    pthread_mutex_lock(&mu);
    if (p->auto_alloc) free(p->work);
    p->live = 0;
    st_plans--;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int cufftSetAutoAllocation(int h, int on) {
    struct plan *p = get_plan(h);
    if (!p) return CUFFT_INVALID_PLAN;
    if (p->made) return CUFFT_INVALID_VALUE; /* before the plan is made, as cuFFT asks */
    p->auto_alloc = on != 0;
    pthread_mutex_lock(&mu);
    st_auto_allocation = p->auto_alloc;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int cufftSetWorkArea(int h, void *work) {
    struct plan *p = get_plan(h);
    if (!p) return CUFFT_INVALID_PLAN;
    p->work = work;
    pthread_mutex_lock(&mu);
    st_work_area = (long long)(uintptr_t)work;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int cufftSetStream(int h, CUstream s) {
    struct plan *p = get_plan(h);
    if (!p) return CUFFT_INVALID_PLAN;
    p->stream = s;
    return 0;
}

static int complex_in(int t) { return t == C2C || t == Z2Z || t == C2R || t == Z2D; }
static int complex_out(int t) { return t == C2C || t == Z2Z || t == R2C || t == D2Z; }
static int dbl(int t) { return t == D2Z || t == Z2D || t == Z2Z; }

EXPORT int cufftMakePlanMany64(int h, int rank, long long *n, long long *inembed, long long istride, long long idist,
                               long long *onembed, long long ostride, long long odist, int type, long long batch,
                               size_t *work_size) {
    struct plan *p = get_plan(h);
    if (!p) return CUFFT_INVALID_PLAN;
    if (!(type == R2C || type == C2R || type == C2C || type == D2Z || type == Z2D || type == Z2Z)) return CUFFT_INVALID_TYPE;
    if (rank < 1 || rank > 3 || !n || batch < 1) return CUFFT_INVALID_SIZE;
    if ((inembed == NULL) != (onembed == NULL)) return CUFFT_INVALID_VALUE;
    long long total = 1;
    for (int d = 0; d < rank; d++) {
        if (n[d] < 1) return CUFFT_INVALID_SIZE;
        p->n[d] = n[d];
        total *= n[d];
    }
    p->type = type;
    p->rank = rank;
    p->batch = batch;
    p->basic_in = p->basic_out = inembed == NULL;
    if (inembed) {
        for (int d = 0; d < rank; d++) {
            p->inembed[d] = inembed[d];
            p->onembed[d] = onembed[d];
        }
        p->istride = istride;
        p->idist = idist;
        p->ostride = ostride;
        p->odist = odist;
    }
    p->made = 1;
    size_t ws = (size_t)(total * batch * (dbl(type) ? 16 : 8));
    if (work_size) *work_size = ws;
    if (p->auto_alloc) p->work = malloc(ws);
    return 0;
}

EXPORT int cufftGetSize(int h, size_t *ws) {
    struct plan *p = get_plan(h);
    if (!p || !p->made) return CUFFT_INVALID_PLAN;
    long long total = p->batch;
    for (int d = 0; d < p->rank; d++) total *= p->n[d];
    *ws = (size_t)(total * (dbl(p->type) ? 16 : 8));
    return 0;
}

/* The logical extents of one side: the complex side of R2C and C2R has
 * n/2+1 elements in its last dimension. */
static void side_dims(const struct plan *p, int complex_side_halved, long long *m) {
    for (int d = 0; d < p->rank; d++) m[d] = p->n[d];
    if (complex_side_halved) m[p->rank - 1] = p->n[p->rank - 1] / 2 + 1;
}

/* The index of position x of batch b on a side of extents embed (the
 * first is not used), stride and dist, as cuFFT's advanced layout. */
static long long at(const struct plan *p, const long long *embed, long long stride, long long dist,
                    const long long *x, long long b) {
    long long i = 0;
    for (int d = 0; d < p->rank; d++) i = i * (d == 0 ? 1 : embed[d]) + x[d];
    return b * dist + stride * i;
}

static void run_fft(struct task *t) {
    struct plan *p = t->plan;
    int type = t->type, r = p->rank;
    int hermitian_in = type == C2R || type == Z2D, half_out = type == R2C || type == D2Z;
    long long nin[3], nout[3], ein[3], eout[3], is, id, os, od;
    side_dims(p, hermitian_in, nin);
    side_dims(p, half_out, nout);
    int inplace = t->in == t->fout;
    if (p->basic_in) {
        for (int d = 0; d < r; d++) ein[d] = nin[d], eout[d] = nout[d];
        /* in place, the real side is padded to the complex side's rows */
        if (inplace && half_out) ein[r - 1] = 2 * nout[r - 1];
        if (inplace && hermitian_in) eout[r - 1] = 2 * nin[r - 1];
        is = os = 1;
        id = 1, od = 1;
        for (int d = 0; d < r; d++) id *= ein[d], od *= eout[d];
    } else {
        for (int d = 0; d < r; d++) ein[d] = p->inembed[d], eout[d] = p->onembed[d];
        is = p->istride, id = p->idist, os = p->ostride, od = p->odist;
    }
    long long total = 1;
    for (int d = 0; d < r; d++) total *= p->n[d];
    double complex *tmp = malloc(sizeof(double complex) * (size_t)total);
    double complex *full = malloc(sizeof(double complex) * (size_t)total);
    double sign = t->dir;
    int isdbl = dbl(type);
    for (long long b = 0; b < p->batch; b++) {
        /* the full logical input, as complex numbers */
        for (long long k = 0; k < total; k++) {
            long long x[3] = {0, 0, 0}, rem = k;
            for (int d = r - 1; d >= 0; d--) x[d] = rem % p->n[d], rem /= p->n[d];
            double complex v;
            if (complex_in(type)) {
                long long y[3] = {0, 0, 0};
                int mirror = 0;
                for (int d = 0; d < r; d++) y[d] = x[d];
                if (hermitian_in && x[r - 1] >= nin[r - 1]) {
                    for (int d = 0; d < r; d++) y[d] = (p->n[d] - x[d]) % p->n[d];
                    mirror = 1;
                }
                long long i = at(p, ein, is, id, y, b);
                if (isdbl) v = ((const double *)t->in)[2 * i] + I * ((const double *)t->in)[2 * i + 1];
                else v = ((const float *)t->in)[2 * i] + I * ((const float *)t->in)[2 * i + 1];
                if (mirror) v = conj(v);
            } else {
                long long i = at(p, ein, is, id, x, b);
                v = isdbl ? ((const double *)t->in)[i] : ((const float *)t->in)[i];
            }
            full[k] = v;
        }
        for (long long k = 0; k < total; k++) {
            long long kx[3] = {0, 0, 0}, rem = k;
            for (int d = r - 1; d >= 0; d--) kx[d] = rem % p->n[d], rem /= p->n[d];
            double complex s = 0;
            for (long long j = 0; j < total; j++) {
                long long jx[3] = {0, 0, 0}, rj = j;
                for (int d = r - 1; d >= 0; d--) jx[d] = rj % p->n[d], rj /= p->n[d];
                double ph = 0;
                for (int d = 0; d < r; d++) ph += (double)(kx[d] * jx[d] % p->n[d]) / (double)p->n[d];
                s += full[j] * cexp(I * sign * 2 * M_PI * ph);
            }
            tmp[k] = s;
        }
        for (long long k = 0; k < total; k++) {
            long long x[3] = {0, 0, 0}, rem = k;
            for (int d = r - 1; d >= 0; d--) x[d] = rem % p->n[d], rem /= p->n[d];
            if (complex_out(type)) {
                if (half_out && x[r - 1] >= nout[r - 1]) continue;
                long long i = at(p, eout, os, od, x, b);
                if (isdbl) ((double *)t->fout)[2 * i] = creal(tmp[k]), ((double *)t->fout)[2 * i + 1] = cimag(tmp[k]);
                else ((float *)t->fout)[2 * i] = (float)creal(tmp[k]), ((float *)t->fout)[2 * i + 1] = (float)cimag(tmp[k]);
            } else {
                long long i = at(p, eout, os, od, x, b);
                if (isdbl) ((double *)t->fout)[i] = creal(tmp[k]);
                else ((float *)t->fout)[i] = (float)creal(tmp[k]);
            }
        }
    }
    free(tmp);
    free(full);
}

static int exec(int h, int type, const void *in, void *out, int dir) {
    struct plan *p = get_plan(h);
    if (!p || !p->made) return CUFFT_INVALID_PLAN;
    if (p->type != type) return CUFFT_INVALID_VALUE;
    if (!in || !out) return CUFFT_INVALID_VALUE;
    if (dir != -1 && dir != 1) return CUFFT_INVALID_VALUE;
    if (!p->work) {
        pthread_mutex_lock(&mu);
        st_exec_without_work_area++;
        pthread_mutex_unlock(&mu);
        return CUFFT_NO_WORKSPACE;
    }
    struct task *t = calloc(1, sizeof *t);
    t->fn = run_fft;
    t->plan = malloc(sizeof *p);
    *t->plan = *p;
    t->type = type;
    t->in = in;
    t->fout = out;
    t->dir = dir;
    return submit(p->stream, t) ? CUFFT_EXEC_FAILED : 0;
}

EXPORT int cufftExecC2C(int h, void *in, void *out, int dir) { return exec(h, C2C, in, out, dir); }
EXPORT int cufftExecZ2Z(int h, void *in, void *out, int dir) { return exec(h, Z2Z, in, out, dir); }
EXPORT int cufftExecR2C(int h, void *in, void *out) { return exec(h, R2C, in, out, -1); }
EXPORT int cufftExecD2Z(int h, void *in, void *out) { return exec(h, D2Z, in, out, -1); }
EXPORT int cufftExecC2R(int h, void *in, void *out) { return exec(h, C2R, in, out, 1); }
EXPORT int cufftExecZ2D(int h, void *in, void *out) { return exec(h, Z2D, in, out, 1); }
