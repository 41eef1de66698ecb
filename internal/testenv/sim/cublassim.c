/*
 * cublassim.c: a CPU stand-in for the parts of cuBLAS and cuBLASLt that
 * purecuda's packages cublas and cublaslt call, for their tests without a
 * GPU. It is a test fixture, not a BLAS: it implements what the tests use,
 * with cuBLAS's status codes and argument rules.
 *
 * Build (internal/testenv/blas_linux.go does it), linked with the driver
 * simulator so that it shares that simulator's state:
 *
 *     cc -O2 -shared -fPIC -pthread -o libcublassim.so cublassim.c /path/libcudasim.so
 *
 * What it models
 *   - Handles (cublasCreate_v2/Destroy_v2, cublasLtCreate/Destroy) with a
 *     stream, a workspace, a math mode and a pointer mode. A destroyed
 *     handle is marked dead and reported as CUBLAS_STATUS_NOT_INITIALIZED.
 *   - The simulator's device memory is host memory (see sim.c), so the
 *     work reads and writes device pointers directly. It runs in stream
 *     order, as a host function (cuLaunchHostFunc) on the handle's stream,
 *     and so it is captured into graphs like any other work; a call made
 *     during a capture keeps its task for the graph's launches.
 *   - Sgemm/Dgemm, Sgemm/DgemmStridedBatched, GemmEx and GemmBatchedEx
 *     with CUDA_R_32F data, Saxpy/Daxpy, Sscal/Dscal, Sgemv/Dgemv,
 *     Strsm/Dtrsm, Sdot/Ddot and Snrm2/Dnrm2 (results on the host, after a
 *     stream synchronisation, or on the device), computed in double; the
 *     _64 forms of each (counted as "calls_64").
 *   - cuBLASLt: descriptors, layouts, preferences (counted live as
 *     "lt_objects"), one heuristic answer whose algorithm asks for all the
 *     workspace the preference allows, and cublasLtMatmul for CUDA_R_32F
 *     with the bias, ReLU and GELU epilogues; a Matmul given a workspace
 *     size without a workspace fails, as it would overrun one on a GPU.
 *   - Failures on demand: cublassim_fail_next(name, count, status) makes
 *     the next count calls of the entry point named fail with status
 *     (for the error paths of the Go packages).
 *
 * Test hooks: int cublassim_live(void *handle): 1 while a handle is live;
 * long long cublassim_stat(const char *name): "live_handles",
 * "creates", "destroys", "calls" (work submitted), "heuristics"
 * (cublasLtMatmulAlgoGetHeuristic calls), "set_workspace", "set_stream",
 * "wrong_context" (work refused: its stream's context was not current),
 * "calls_64" (calls through a _64 entry point), "lt_objects" (live
 * cuBLASLt descriptors, layouts and preferences), "lt_ws_size" (the
 * workspace size the last cublasLtMatmul was given), "lt_ws_given" (1 if
 * it was given a workspace pointer, 0 for NULL); -1 if unknown.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *userData);
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *user);
CUresult cuStreamSynchronize(CUstream h);
CUresult cuStreamIsCapturing(CUstream h, int *status);
typedef struct CUctx_st *CUcontext;
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuStreamGetCtx(CUstream h, CUcontext *pctx);

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

enum { OP_N = 0, OP_T = 1, OP_C = 2 };
enum { R_32F = 0, R_64F = 1 };
enum { HANDLE_MAGIC = 0x426c6173, LT_MAGIC = 0x4c744c74, DEAD = 0 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long st_live, st_creates, st_destroys, st_calls, st_heuristics, st_set_workspace, st_set_stream,
    st_wrong_context, st_calls_64, st_lt_objects, st_lt_ws_size, st_lt_ws_given;

/* Failures on demand: the next count calls of name return status. */
static struct {
    char name[64];
    int count, status;
} fails[16];

int cublassim_fail_next(const char *name, int count, int status) {
    pthread_mutex_lock(&mu);
    int slot = -1;
    for (int i = 0; i < 16; i++) {
        if (fails[i].count > 0 && !strcmp(fails[i].name, name)) slot = i;
        if (slot < 0 && fails[i].count == 0) slot = i;
    }
    if (slot >= 0) {
        strncpy(fails[slot].name, name, sizeof fails[slot].name - 1);
        fails[slot].count = count;
        fails[slot].status = status;
    }
    pthread_mutex_unlock(&mu);
    return slot < 0 ? -1 : 0;
}

/* failing is the status the call named must fail with, or 0. */
static int failing(const char *name) {
    int st = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 16; i++) {
        if (fails[i].count > 0 && !strcmp(fails[i].name, name)) {
            fails[i].count--;
            st = fails[i].status;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return st;
}

#define FAIL_POINT(name)                                                                                               \
    do {                                                                                                               \
        int fail_ = failing(name);                                                                                     \
        if (fail_) return fail_;                                                                                       \
    } while (0)

static void count(long long *c, long long d) {
    pthread_mutex_lock(&mu);
    *c += d;
    pthread_mutex_unlock(&mu);
}

struct handle {
    int magic;
    CUstream stream;
    void *workspace;
    size_t workspace_size;
    int math_mode;
    int pointer_mode; /* 0 host, 1 device */
};

long long cublassim_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&mu);
    if (!strcmp(name, "live_handles")) v = st_live;
    else if (!strcmp(name, "creates")) v = st_creates;
    else if (!strcmp(name, "destroys")) v = st_destroys;
    else if (!strcmp(name, "calls")) v = st_calls;
    else if (!strcmp(name, "heuristics")) v = st_heuristics;
    else if (!strcmp(name, "set_workspace")) v = st_set_workspace;
    else if (!strcmp(name, "set_stream")) v = st_set_stream;
    else if (!strcmp(name, "wrong_context")) v = st_wrong_context;
    else if (!strcmp(name, "calls_64")) v = st_calls_64;
    else if (!strcmp(name, "lt_objects")) v = st_lt_objects;
    else if (!strcmp(name, "lt_ws_size")) v = st_lt_ws_size;
    else if (!strcmp(name, "lt_ws_given")) v = st_lt_ws_given;
    pthread_mutex_unlock(&mu);
    return v;
}

static int live(struct handle *h, int magic) { return h && h->magic == magic; }

/* ----- cuBLAS: handles ----- */

cublasStatus_t cublasCreate_v2(struct handle **out) {
    FAIL_POINT("cublasCreate_v2");
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    struct handle *h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = HANDLE_MAGIC;
    pthread_mutex_lock(&mu);
    st_live++;
    st_creates++;
    pthread_mutex_unlock(&mu);
    *out = h;
    return CUBLAS_STATUS_SUCCESS;
}

/* A destroy made to fail (cublassim_fail_next) destroys the handle still
 * and reports the failure, so that no test leaves a live handle behind. */
cublasStatus_t cublasDestroy_v2(struct handle *h) {
    int fail = failing("cublasDestroy_v2");
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->magic = DEAD; /* never freed: a stale handle reads as dead */
    pthread_mutex_lock(&mu);
    st_live--;
    st_destroys++;
    pthread_mutex_unlock(&mu);
    return fail ? fail : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(int type, int *value) {
    static const int v[3] = {13, 1, 0};
    if (!value || type < 0 || type > 2) return CUBLAS_STATUS_INVALID_VALUE;
    *value = v[type];
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown error";
    }
}

cublasStatus_t cublasSetStream_v2(struct handle *h, CUstream s) {
    FAIL_POINT("cublasSetStream_v2");
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    /* As cuBLAS does: a new stream drops the workspace set before. */
    h->workspace = NULL;
    h->workspace_size = 0;
    pthread_mutex_lock(&mu);
    st_set_stream++;
    pthread_mutex_unlock(&mu);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(struct handle *h, CUstream *s) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!s) return CUBLAS_STATUS_INVALID_VALUE;
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(struct handle *h, void *ws, size_t size) {
    FAIL_POINT("cublasSetWorkspace_v2");
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (size > 0 && !ws) return CUBLAS_STATUS_INVALID_VALUE;
    if ((uintptr_t)ws % 256) return CUBLAS_STATUS_INVALID_VALUE;
    h->workspace = ws;
    h->workspace_size = size;
    pthread_mutex_lock(&mu);
    st_set_workspace++;
    pthread_mutex_unlock(&mu);
    return CUBLAS_STATUS_SUCCESS;
}

/* cublassim_live says whether h is a live cuBLAS or cuBLASLt handle
 * (handles are never freed, so any handle once made can be asked). */
int cublassim_live(void *h) {
    if (!h) return 0;
    int magic = *(int *)h;
    return magic == HANDLE_MAGIC || magic == LT_MAGIC;
}

/* cublassim_workspace reports a handle's workspace, for the tests. */
size_t cublassim_workspace(struct handle *h, void **ws) {
    if (!live(h, HANDLE_MAGIC)) return (size_t)-1;
    *ws = h->workspace;
    return h->workspace_size;
}

cublasStatus_t cublasSetMathMode(struct handle *h, int mode) {
    FAIL_POINT("cublasSetMathMode");
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((mode & 0xf) > 3) return CUBLAS_STATUS_INVALID_VALUE;
    h->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(struct handle *h, int *mode) {
    FAIL_POINT("cublasGetMathMode");
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(struct handle *h, int mode) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != 0 && mode != 1) return CUBLAS_STATUS_INVALID_VALUE;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(struct handle *h, int *mode) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* ----- work in stream order ----- */

enum { W_GEMM, W_AXPY, W_DOT, W_LT, W_SCAL, W_NRM2, W_GEMV, W_TRSM };

struct work {
    int kind, dbl; /* dbl: double elements, else float */
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc, batch, sa, sb, sc, inc_x, inc_y;
    double alpha, beta;
    const void *a, *b;
    void *c;
    /* W_GEMM from arrays of pointers (GemmBatchedEx), read when it runs */
    const void *const *aa, *const *ba;
    void *const *ca;
    double *host_result; /* W_DOT with host pointer mode */
    void *dev_result;    /* W_DOT with device pointer mode */
    int keep;            /* captured: the graph runs it again */
    int side, uplo, diag; /* W_TRSM */
    /* W_LT */
    int epilogue;
    const float *bias;
    const float *lt_c;
    float *lt_d;
};

static double get(const void *p, int dbl, int64_t i) { return dbl ? ((const double *)p)[i] : ((const float *)p)[i]; }
static void put(void *p, int dbl, int64_t i, double v) {
    if (dbl) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

/* elem is op(X)[r][c] of a column-major X with leading dimension ld. */
static int64_t elem(int op, int64_t r, int64_t c, int64_t ld) { return op == OP_N ? r + c * ld : c + r * ld; }

static void run_gemm(struct work *w) {
    for (int64_t b = 0; b < w->batch; b++) {
        const char *A = (const char *)w->a + b * w->sa * (w->dbl ? 8 : 4);
        const char *B = (const char *)w->b + b * w->sb * (w->dbl ? 8 : 4);
        char *C = (char *)w->c + b * w->sc * (w->dbl ? 8 : 4);
        if (w->aa) {
            A = w->aa[b];
            B = w->ba[b];
            C = w->ca[b];
        }
        for (int64_t j = 0; j < w->n; j++) {
            for (int64_t i = 0; i < w->m; i++) {
                double s = 0;
                for (int64_t p = 0; p < w->k; p++)
                    s += get(A, w->dbl, elem(w->ta, i, p, w->lda)) * get(B, w->dbl, elem(w->tb, p, j, w->ldb));
                double old = w->beta == 0 ? 0 : get(C, w->dbl, i + j * w->ldc);
                put(C, w->dbl, i + j * w->ldc, w->alpha * s + w->beta * old);
            }
        }
    }
}

static int64_t at(int64_t i, int64_t n, int64_t inc) { return inc >= 0 ? i * inc : (n - 1 - i) * -inc; }

static double gelu(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static void run_lt(struct work *w) {
    for (int64_t j = 0; j < w->n; j++) {
        for (int64_t i = 0; i < w->m; i++) {
            double s = 0;
            for (int64_t p = 0; p < w->k; p++)
                s += ((const float *)w->a)[elem(w->ta, i, p, w->lda)] * ((const float *)w->b)[elem(w->tb, p, j, w->ldb)];
            double v = w->alpha * s + (w->beta == 0 ? 0 : w->beta * w->lt_c[i + j * w->ldc]);
            if (w->bias) v += w->bias[i];
            if (w->epilogue & 2) v = v > 0 ? v : 0;  /* RELU */
            if (w->epilogue & 32) v = gelu(v);       /* GELU */
            w->lt_d[i + j * w->ldc] = (float)v;
        }
    }
}

/* run_gemv: y = alpha*op(A)*x + beta*y, A m x n (w->m, w->n). */
static void run_gemv(struct work *w) {
    int64_t rows = w->ta == OP_N ? w->m : w->n, cols = w->ta == OP_N ? w->n : w->m;
    for (int64_t i = 0; i < rows; i++) {
        double s = 0;
        for (int64_t p = 0; p < cols; p++)
            s += get(w->a, w->dbl, elem(w->ta, i, p, w->lda)) * get(w->b, w->dbl, at(p, cols, w->inc_x));
        int64_t iy = at(i, rows, w->inc_y);
        double old = w->beta == 0 ? 0 : get(w->c, w->dbl, iy);
        put(w->c, w->dbl, iy, w->alpha * s + w->beta * old);
    }
}

/* run_trsm solves op(A)*X = alpha*B (left) or X*op(A) = alpha*B (right),
 * X over B: each column (left) or row (right) of B is a triangular solve
 * with T = op(A) or op(A)^T. */
static void run_trsm(struct work *w) {
    int64_t kk = w->side == 0 ? w->m : w->n;
    double *T = calloc((size_t)(kk * kk), sizeof *T);
    double *v = calloc((size_t)kk, sizeof *v);
    if (!T || !v) {
        free(T);
        free(v);
        return;
    }
    for (int64_t i = 0; i < kk; i++) {
        for (int64_t j = 0; j < kk; j++) {
            /* op(A)(r, c), from the stored triangle */
            int64_t r = w->side == 0 ? i : j, c = w->side == 0 ? j : i;
            int64_t sr = w->ta == OP_N ? r : c, sc = w->ta == OP_N ? c : r;
            int in = w->uplo == 0 ? sr >= sc : sr <= sc;
            double a = in ? get(w->a, w->dbl, sr + sc * w->lda) : 0;
            if (sr == sc && w->diag == 1) a = 1;
            T[i + j * kk] = a;
        }
    }
    int64_t lines = w->side == 0 ? w->n : w->m;
    for (int64_t l = 0; l < lines; l++) {
        /* element p of the line: B(p, l) on the left, B(l, p) on the right */
        for (int64_t p = 0; p < kk; p++)
            v[p] = w->alpha * get(w->c, w->dbl, w->side == 0 ? p + l * w->ldb : l + p * w->ldb);
        int lower = 1;
        for (int64_t i = 0; i < kk && lower; i++)
            for (int64_t j = i + 1; j < kk; j++)
                if (T[i + j * kk] != 0) lower = 0;
        if (lower) {
            for (int64_t i = 0; i < kk; i++) {
                for (int64_t p = 0; p < i; p++) v[i] -= T[i + p * kk] * v[p];
                v[i] /= T[i + i * kk];
            }
        } else {
            for (int64_t i = kk - 1; i >= 0; i--) {
                for (int64_t p = i + 1; p < kk; p++) v[i] -= T[i + p * kk] * v[p];
                v[i] /= T[i + i * kk];
            }
        }
        for (int64_t p = 0; p < kk; p++) put(w->c, w->dbl, w->side == 0 ? p + l * w->ldb : l + p * w->ldb, v[p]);
    }
    free(T);
    free(v);
}

static void run(void *p) {
    struct work *w = p;
    switch (w->kind) {
    case W_GEMM:
        run_gemm(w);
        break;
    case W_AXPY:
        for (int64_t i = 0; i < w->n; i++) {
            int64_t ix = at(i, w->n, w->inc_x), iy = at(i, w->n, w->inc_y);
            put(w->c, w->dbl, iy, w->alpha * get(w->a, w->dbl, ix) + get(w->c, w->dbl, iy));
        }
        break;
    case W_DOT: {
        double s = 0;
        for (int64_t i = 0; i < w->n; i++)
            s += get(w->a, w->dbl, at(i, w->n, w->inc_x)) * get(w->b, w->dbl, at(i, w->n, w->inc_y));
        if (w->host_result) *w->host_result = s;
        if (w->dev_result) put(w->dev_result, w->dbl, 0, s);
        break;
    }
    case W_LT:
        run_lt(w);
        break;
    case W_SCAL:
        for (int64_t i = 0; i < w->n; i++) put(w->c, w->dbl, i * w->inc_x, w->alpha * get(w->c, w->dbl, i * w->inc_x));
        break;
    case W_NRM2: {
        double s = 0;
        for (int64_t i = 0; i < w->n; i++) {
            double v = get(w->a, w->dbl, i * w->inc_x);
            s += v * v;
        }
        s = sqrt(s);
        if (w->host_result) *w->host_result = s;
        if (w->dev_result) put(w->dev_result, w->dbl, 0, s);
        break;
    }
    case W_GEMV:
        run_gemv(w);
        break;
    case W_TRSM:
        run_trsm(w);
        break;
    }
    if (!w->keep) free(w);
}

/* submit queues w on the stream; a call during a capture keeps w. As
 * cuBLAS launches through the CUDA runtime into the calling thread's
 * current context, work on a stream of another context than the current
 * one fails (counted as "wrong_context"): package cublas must make the
 * stream's context current for each call. */
static cublasStatus_t submit(CUstream s, struct work *w) {
    CUcontext cur = NULL, want = NULL;
    if (s && (cuCtxGetCurrent(&cur) != 0 || cuStreamGetCtx(s, &want) != 0 || cur != want)) {
        pthread_mutex_lock(&mu);
        st_wrong_context++;
        pthread_mutex_unlock(&mu);
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    int status = 0;
    if (s && cuStreamIsCapturing(s, &status) == 0 && status != 0) w->keep = 1;
    pthread_mutex_lock(&mu);
    st_calls++;
    pthread_mutex_unlock(&mu);
    if (cuLaunchHostFunc(s, run, w) != 0) {
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static double scalar(struct handle *h, const void *p, int dbl) {
    /* Device pointer mode reads the value when the work runs on a GPU;
     * here device memory is host memory and it is read now. */
    (void)h;
    return get(p, dbl, 0);
}

/* ----- Level 3 ----- */

static cublasStatus_t gemm(struct handle *h, int dbl, int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const void *alpha, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb,
                           int64_t sb, const void *beta, void *C, int64_t ldc, int64_t sc, int64_t batch) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (ta < 0 || ta > 2 || tb < 0 || tb > 2 || m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int64_t ra = ta == OP_N ? m : k, rb = tb == OP_N ? k : n;
    if (lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_GEMM, .dbl = dbl, .ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                       .lda = lda, .ldb = ldb, .ldc = ldc, .sa = sa, .sb = sb, .sc = sc, .batch = batch,
                       .alpha = scalar(h, alpha, dbl), .beta = scalar(h, beta, dbl), .a = A, .b = B, .c = C};
    return submit(h->stream, w);
}

cublasStatus_t cublasSgemm_v2(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc) {
    FAIL_POINT("cublasSgemm_v2");
    return gemm(h, 0, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasDgemm_v2(struct handle *h, int ta, int tb, int m, int n, int k, const double *alpha,
                              const double *A, int lda, const double *B, int ldb, const double *beta, double *C, int ldc) {
    FAIL_POINT("cublasDgemm_v2");
    return gemm(h, 1, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasSgemm_v2_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *alpha,
                                 const float *A, int64_t lda, const float *B, int64_t ldb, const float *beta, float *C,
                                 int64_t ldc) {
    FAIL_POINT("cublasSgemm_v2_64");
    count(&st_calls_64, 1);
    return gemm(h, 0, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasDgemm_v2_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const double *alpha,
                                 const double *A, int64_t lda, const double *B, int64_t ldb, const double *beta,
                                 double *C, int64_t ldc) {
    FAIL_POINT("cublasDgemm_v2_64");
    count(&st_calls_64, 1);
    return gemm(h, 1, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
cublasStatus_t cublasSgemmStridedBatched(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                                         const float *A, int lda, long long sa, const float *B, int ldb, long long sb,
                                         const float *beta, float *C, int ldc, long long sc, int batch) {
    FAIL_POINT("cublasSgemmStridedBatched");
    return gemm(h, 0, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched(struct handle *h, int ta, int tb, int m, int n, int k, const double *alpha,
                                         const double *A, int lda, long long sa, const double *B, int ldb, long long sb,
                                         const double *beta, double *C, int ldc, long long sc, int batch) {
    FAIL_POINT("cublasDgemmStridedBatched");
    return gemm(h, 1, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}

/* GemmEx for CUDA_R_32F data with a 32F compute type (68, 74, 75, 77). */
static cublasStatus_t gemm_ex(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                              const void *A, int at, int64_t lda, const void *B, int bt, int64_t ldb, const void *beta,
                              void *C, int ct, int64_t ldc, int compute, int algo, int k64) {
    (void)algo;
    FAIL_POINT(k64 ? "cublasGemmEx_64" : "cublasGemmEx");
    if (at != R_32F || bt != R_32F || ct != R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (compute != 68 && compute != 74 && compute != 75 && compute != 77) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm(h, 0, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

/* GemmBatchedEx for CUDA_R_32F data with a 32F compute type: arrays of
 * device pointers, one matrix each. */
static cublasStatus_t gemm_batched_ex(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                      const void *alpha, const void *const A[], int at, int64_t lda,
                                      const void *const B[], int bt, int64_t ldb, const void *beta, void *const C[],
                                      int ct, int64_t ldc, int64_t batch, int compute, int algo, int k64) {
    (void)algo;
    FAIL_POINT(k64 ? "cublasGemmBatchedEx_64" : "cublasGemmBatchedEx");
    if (at != R_32F || bt != R_32F || ct != R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (compute != 68 && compute != 74 && compute != 75 && compute != 77) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!A || !B || !C) return CUBLAS_STATUS_INVALID_VALUE;
    struct handle *hh = h;
    if (!live(hh, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_GEMM, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
                       .ldc = ldc, .batch = batch, .alpha = scalar(h, alpha, 0), .beta = scalar(h, beta, 0),
                       .aa = A, .ba = B, .ca = C};
    return submit(h->stream, w);
}

/* ----- Level 1 ----- */

static cublasStatus_t axpy(struct handle *h, int dbl, int64_t n, const void *alpha, const void *x, int64_t incx,
                           void *y, int64_t incy) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!alpha) return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_AXPY, .dbl = dbl, .n = n, .alpha = scalar(h, alpha, dbl), .a = x, .inc_x = incx,
                       .c = y, .inc_y = incy};
    return submit(h->stream, w);
}

cublasStatus_t cublasSaxpy_v2(struct handle *h, int n, const float *alpha, const float *x, int incx, float *y, int incy) {
    FAIL_POINT("cublasSaxpy_v2");
    return axpy(h, 0, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasDaxpy_v2(struct handle *h, int n, const double *alpha, const double *x, int incx, double *y,
                              int incy) {
    FAIL_POINT("cublasDaxpy_v2");
    return axpy(h, 1, n, alpha, x, incx, y, incy);
}

static cublasStatus_t dot(struct handle *h, int dbl, int64_t n, const void *x, int64_t incx, const void *y,
                          int64_t incy, void *result) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!result) return CUBLAS_STATUS_INVALID_VALUE;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    double s = 0;
    *w = (struct work){.kind = W_DOT, .dbl = dbl, .n = n > 0 ? n : 0, .a = x, .inc_x = incx, .b = y, .inc_y = incy};
    if (h->pointer_mode == 0) {
        w->host_result = &s;
        int status = 0;
        if (h->stream && cuStreamIsCapturing(h->stream, &status) == 0 && status != 0) {
            free(w);
            return CUBLAS_STATUS_NOT_SUPPORTED; /* a host result cannot be captured */
        }
    } else {
        w->dev_result = result;
    }
    cublasStatus_t st = submit(h->stream, w);
    if (st != CUBLAS_STATUS_SUCCESS || h->pointer_mode != 0) return st;
    if (cuStreamSynchronize(h->stream) != 0) return CUBLAS_STATUS_EXECUTION_FAILED;
    put(result, dbl, 0, s);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSdot_v2(struct handle *h, int n, const float *x, int incx, const float *y, int incy, float *r) {
    FAIL_POINT("cublasSdot_v2");
    return dot(h, 0, n, x, incx, y, incy, r);
}
cublasStatus_t cublasDdot_v2(struct handle *h, int n, const double *x, int incx, const double *y, int incy, double *r) {
    FAIL_POINT("cublasDdot_v2");
    return dot(h, 1, n, x, incx, y, incy, r);
}

/* ----- cuBLASLt ----- */

struct lt {
    int magic;
};


struct pref {
    uint64_t max_workspace;
};

typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

cublasStatus_t cublasLtCreate(struct lt **out) {
    FAIL_POINT("cublasLtCreate");
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    struct lt *l = calloc(1, sizeof *l);
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    l->magic = LT_MAGIC;
    pthread_mutex_lock(&mu);
    st_live++;
    st_creates++;
    pthread_mutex_unlock(&mu);
    *out = l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(struct lt *l) {
    int fail = failing("cublasLtDestroy"); /* destroyed still, as cublasDestroy_v2 */
    if (!l || l->magic != LT_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    l->magic = DEAD;
    pthread_mutex_lock(&mu);
    st_live--;
    st_destroys++;
    pthread_mutex_unlock(&mu);
    return fail ? fail : CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return 130100; }

cublasStatus_t cublasLtMatmulPreferenceCreate(struct pref **out) {
    FAIL_POINT("cublasLtMatmulPreferenceCreate");
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    *out = calloc(1, sizeof **out);
    if (*out) count(&st_lt_objects, 1);
    return *out ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(struct pref *p) {
    FAIL_POINT("cublasLtMatmulPreferenceDestroy");
    if (p) count(&st_lt_objects, -1);
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

/* Attribute 1: CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64). */
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(struct pref *p, int attr, const void *buf, size_t size) {
    FAIL_POINT("cublasLtMatmulPreferenceSetAttribute");
    if (!p || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    if (attr == 1) {
        if (size != 8) return CUBLAS_STATUS_INVALID_VALUE;
        p->max_workspace = *(const uint64_t *)buf;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Descriptors, layouts, the heuristic and cublasLtMatmul: see the
 * cuBLASLt block at the end of the file. */

/* ----- more Level 1 and 2, Trsm, and the _64 forms ----- */

#define WRAP64(name) FAIL_POINT(name); count(&st_calls_64, 1)

static cublasStatus_t scal(struct handle *h, int dbl, int64_t n, const void *alpha, void *x, int64_t incx) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!alpha) return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_SCAL, .dbl = dbl, .n = n, .alpha = scalar(h, alpha, dbl), .c = x, .inc_x = incx};
    return submit(h->stream, w);
}

static cublasStatus_t nrm2(struct handle *h, int dbl, int64_t n, const void *x, int64_t incx, void *result) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!result) return CUBLAS_STATUS_INVALID_VALUE;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    double s = 0;
    *w = (struct work){.kind = W_NRM2, .dbl = dbl, .n = n > 0 && incx > 0 ? n : 0, .a = x, .inc_x = incx};
    if (h->pointer_mode == 0) {
        w->host_result = &s;
        int status = 0;
        if (h->stream && cuStreamIsCapturing(h->stream, &status) == 0 && status != 0) {
            free(w);
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    } else {
        w->dev_result = result;
    }
    cublasStatus_t st = submit(h->stream, w);
    if (st != CUBLAS_STATUS_SUCCESS || h->pointer_mode != 0) return st;
    if (cuStreamSynchronize(h->stream) != 0) return CUBLAS_STATUS_EXECUTION_FAILED;
    put(result, dbl, 0, s);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t gemv(struct handle *h, int dbl, int trans, int64_t m, int64_t n, const void *alpha, const void *A,
                           int64_t lda, const void *x, int64_t incx, const void *beta, void *y, int64_t incy) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (trans < 0 || trans > 2 || m < 0 || n < 0 || lda < (m > 1 ? m : 1) || incx == 0 || incy == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_GEMV, .dbl = dbl, .ta = trans, .m = m, .n = n, .lda = lda, .alpha = scalar(h, alpha, dbl),
                       .beta = scalar(h, beta, dbl), .a = A, .b = x, .inc_x = incx, .c = y, .inc_y = incy};
    return submit(h->stream, w);
}

static cublasStatus_t trsm(struct handle *h, int dbl, int side, int uplo, int trans, int diag, int64_t m, int64_t n,
                           const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    int64_t ka = side == 0 ? m : n;
    if (side < 0 || side > 1 || uplo < 0 || uplo > 1 || diag < 0 || diag > 1 || trans < 0 || trans > 2 || m < 0 ||
        n < 0 || lda < (ka > 1 ? ka : 1) || ldb < (m > 1 ? m : 1) || !alpha)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    struct work *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct work){.kind = W_TRSM, .dbl = dbl, .side = side, .uplo = uplo, .ta = trans, .diag = diag, .m = m,
                       .n = n, .lda = lda, .ldb = ldb, .alpha = scalar(h, alpha, dbl), .a = A, .c = B};
    return submit(h->stream, w);
}

cublasStatus_t cublasSscal_v2(struct handle *h, int n, const float *alpha, float *x, int incx) {
    FAIL_POINT("cublasSscal_v2");
    return scal(h, 0, n, alpha, x, incx);
}
cublasStatus_t cublasDscal_v2(struct handle *h, int n, const double *alpha, double *x, int incx) {
    FAIL_POINT("cublasDscal_v2");
    return scal(h, 1, n, alpha, x, incx);
}
cublasStatus_t cublasSscal_v2_64(struct handle *h, int64_t n, const float *alpha, float *x, int64_t incx) {
    WRAP64("cublasSscal_v2_64");
    return scal(h, 0, n, alpha, x, incx);
}
cublasStatus_t cublasDscal_v2_64(struct handle *h, int64_t n, const double *alpha, double *x, int64_t incx) {
    WRAP64("cublasDscal_v2_64");
    return scal(h, 1, n, alpha, x, incx);
}
cublasStatus_t cublasSnrm2_v2(struct handle *h, int n, const float *x, int incx, float *r) {
    FAIL_POINT("cublasSnrm2_v2");
    return nrm2(h, 0, n, x, incx, r);
}
cublasStatus_t cublasDnrm2_v2(struct handle *h, int n, const double *x, int incx, double *r) {
    FAIL_POINT("cublasDnrm2_v2");
    return nrm2(h, 1, n, x, incx, r);
}
cublasStatus_t cublasSnrm2_v2_64(struct handle *h, int64_t n, const float *x, int64_t incx, float *r) {
    WRAP64("cublasSnrm2_v2_64");
    return nrm2(h, 0, n, x, incx, r);
}
cublasStatus_t cublasDnrm2_v2_64(struct handle *h, int64_t n, const double *x, int64_t incx, double *r) {
    WRAP64("cublasDnrm2_v2_64");
    return nrm2(h, 1, n, x, incx, r);
}
cublasStatus_t cublasSaxpy_v2_64(struct handle *h, int64_t n, const float *alpha, const float *x, int64_t incx, float *y,
                                 int64_t incy) {
    WRAP64("cublasSaxpy_v2_64");
    return axpy(h, 0, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasDaxpy_v2_64(struct handle *h, int64_t n, const double *alpha, const double *x, int64_t incx,
                                 double *y, int64_t incy) {
    WRAP64("cublasDaxpy_v2_64");
    return axpy(h, 1, n, alpha, x, incx, y, incy);
}
cublasStatus_t cublasSdot_v2_64(struct handle *h, int64_t n, const float *x, int64_t incx, const float *y, int64_t incy,
                                float *r) {
    WRAP64("cublasSdot_v2_64");
    return dot(h, 0, n, x, incx, y, incy, r);
}
cublasStatus_t cublasDdot_v2_64(struct handle *h, int64_t n, const double *x, int64_t incx, const double *y,
                                int64_t incy, double *r) {
    WRAP64("cublasDdot_v2_64");
    return dot(h, 1, n, x, incx, y, incy, r);
}
cublasStatus_t cublasSgemv_v2(struct handle *h, int trans, int m, int n, const float *alpha, const float *A, int lda,
                              const float *x, int incx, const float *beta, float *y, int incy) {
    FAIL_POINT("cublasSgemv_v2");
    return gemv(h, 0, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasDgemv_v2(struct handle *h, int trans, int m, int n, const double *alpha, const double *A, int lda,
                              const double *x, int incx, const double *beta, double *y, int incy) {
    FAIL_POINT("cublasDgemv_v2");
    return gemv(h, 1, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasSgemv_v2_64(struct handle *h, int trans, int64_t m, int64_t n, const float *alpha, const float *A,
                                 int64_t lda, const float *x, int64_t incx, const float *beta, float *y, int64_t incy) {
    WRAP64("cublasSgemv_v2_64");
    return gemv(h, 0, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasDgemv_v2_64(struct handle *h, int trans, int64_t m, int64_t n, const double *alpha,
                                 const double *A, int64_t lda, const double *x, int64_t incx, const double *beta,
                                 double *y, int64_t incy) {
    WRAP64("cublasDgemv_v2_64");
    return gemv(h, 1, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasStrsm_v2(struct handle *h, int side, int uplo, int trans, int diag, int m, int n,
                              const float *alpha, const float *A, int lda, float *B, int ldb) {
    FAIL_POINT("cublasStrsm_v2");
    return trsm(h, 0, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
cublasStatus_t cublasDtrsm_v2(struct handle *h, int side, int uplo, int trans, int diag, int m, int n,
                              const double *alpha, const double *A, int lda, double *B, int ldb) {
    FAIL_POINT("cublasDtrsm_v2");
    return trsm(h, 1, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
cublasStatus_t cublasStrsm_v2_64(struct handle *h, int side, int uplo, int trans, int diag, int64_t m, int64_t n,
                                 const float *alpha, const float *A, int64_t lda, float *B, int64_t ldb) {
    WRAP64("cublasStrsm_v2_64");
    return trsm(h, 0, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
cublasStatus_t cublasDtrsm_v2_64(struct handle *h, int side, int uplo, int trans, int diag, int64_t m, int64_t n,
                                 const double *alpha, const double *A, int64_t lda, double *B, int64_t ldb) {
    WRAP64("cublasDtrsm_v2_64");
    return trsm(h, 1, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
cublasStatus_t cublasSgemmStridedBatched_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                            const float *alpha, const float *A, int64_t lda, long long sa,
                                            const float *B, int64_t ldb, long long sb, const float *beta, float *C,
                                            int64_t ldc, long long sc, int64_t batch) {
    WRAP64("cublasSgemmStridedBatched_64");
    return gemm(h, 0, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                            const double *alpha, const double *A, int64_t lda, long long sa,
                                            const double *B, int64_t ldb, long long sb, const double *beta, double *C,
                                            int64_t ldc, long long sc, int64_t batch) {
    WRAP64("cublasDgemmStridedBatched_64");
    return gemm(h, 1, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasGemmEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                            int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc,
                            int compute, int algo) {
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo, 0);
}
cublasStatus_t cublasGemmEx_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                               const void *A, int at, int64_t lda, const void *B, int bt, int64_t ldb, const void *beta,
                               void *C, int ct, int64_t ldc, int compute, int algo) {
    count(&st_calls_64, 1);
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo, 1);
}
cublasStatus_t cublasGemmBatchedEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha,
                                   const void *const A[], int at, int lda, const void *const B[], int bt, int ldb,
                                   const void *beta, void *const C[], int ct, int ldc, int batch, int compute,
                                   int algo) {
    return gemm_batched_ex(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch, compute, algo, 0);
}
cublasStatus_t cublasGemmBatchedEx_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                      const void *alpha, const void *const A[], int at, int64_t lda,
                                      const void *const B[], int bt, int64_t ldb, const void *beta, void *const C[],
                                      int ct, int64_t ldc, int64_t batch, int compute, int algo) {
    count(&st_calls_64, 1);
    return gemm_batched_ex(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch, compute, algo, 1);
}

/* ===== GemmStridedBatchedEx: mixed element types, device scalars =====
 *
 * cublasGemmStridedBatchedEx (and _64) with A, B and C each of CUDA_R_32F,
 * R_64F, R_16F, R_16BF, R_8I or R_32I, computed in double; alpha and beta
 * in the compute type's scale type (32F: float, 64F: double, 16F: half,
 * 32I: int). In device pointer mode the scalars are read when the work
 * runs, as a GPU reads them, so that a captured graph sees the values
 * written before each launch. Kept apart from the rest of the file. */

enum { X_R_16F = 2, X_R_8I = 3, X_R_32I = 10, X_R_16BF = 14 };

static float x_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000 | frac << 13;
    else if (exp == 0 && frac == 0) bits = sign;
    else if (exp == 0) {
        uint32_t e = 127 - 15 + 1;
        while (!(frac & 0x400)) { frac <<= 1; e--; }
        bits = sign | e << 23 | (frac & 0x3ff) << 13;
    } else bits = sign | (exp + 127 - 15) << 23 | frac << 13;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t x_float_to_half(float f) {
    /* Round to nearest even through the FPU: good enough for a stand-in. */
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t sign = (b >> 16) & 0x8000;
    float a = fabsf(f);
    if (a != a) return sign | 0x7e00;
    if (a >= 65520.0f) return sign | 0x7c00;
    if (a < 6.103515625e-05f) return sign | (uint16_t)lrintf(a / 5.960464477539063e-08f);
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    uint32_t mant = (uint32_t)lrintf(m * 2048.0f); /* 11 bits with the implicit one */
    if (mant == 2048) { mant = 1024; e++; }
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(mant & 0x3ff);
}

static int x_size(int type) {
    switch (type) {
    case R_32F: case X_R_32I: return 4;
    case R_64F: return 8;
    case X_R_16F: case X_R_16BF: return 2;
    case X_R_8I: return 1;
    }
    return 0;
}

static double x_get(const void *p, int type, int64_t i) {
    switch (type) {
    case R_32F: return ((const float *)p)[i];
    case R_64F: return ((const double *)p)[i];
    case X_R_16F: return x_half_to_float(((const uint16_t *)p)[i]);
    case X_R_16BF: {
        uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    case X_R_8I: return ((const int8_t *)p)[i];
    case X_R_32I: return ((const int32_t *)p)[i];
    }
    return 0;
}

static void x_put(void *p, int type, int64_t i, double v) {
    switch (type) {
    case R_32F: ((float *)p)[i] = (float)v; break;
    case R_64F: ((double *)p)[i] = v; break;
    case X_R_16F: ((uint16_t *)p)[i] = x_float_to_half((float)v); break;
    case X_R_16BF: {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        b += 0x7fff + ((b >> 16) & 1);
        ((uint16_t *)p)[i] = (uint16_t)(b >> 16);
        break;
    }
    case X_R_8I: ((int8_t *)p)[i] = (int8_t)v; break;
    case X_R_32I: ((int32_t *)p)[i] = (int32_t)v; break;
    }
}

/* x_scale is the scale type of a compute type; -1 if unknown. */
static int x_scale(int compute) {
    switch (compute) {
    case 68: case 69: case 74: case 75: case 77: case 78: return R_32F;
    case 70: case 71: case 79: return R_64F;
    case 64: case 65: return X_R_16F;
    case 72: case 73: return X_R_32I;
    }
    return -1;
}

struct xgemm {
    int ta, tb, at, bt, ct, scale, keep;
    int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, batch;
    double alpha, beta;                /* host pointer mode */
    const void *dalpha, *dbeta;        /* device pointer mode: read when run */
    const void *a, *b;
    void *c;
};

static void x_run(void *p) {
    struct xgemm *w = p;
    double alpha = w->dalpha ? x_get(w->dalpha, w->scale, 0) : w->alpha;
    double beta = w->dbeta ? x_get(w->dbeta, w->scale, 0) : w->beta;
    for (int64_t b = 0; b < w->batch; b++) {
        const char *A = (const char *)w->a + b * w->sa * x_size(w->at);
        const char *B = (const char *)w->b + b * w->sb * x_size(w->bt);
        char *C = (char *)w->c + b * w->sc * x_size(w->ct);
        for (int64_t j = 0; j < w->n; j++) {
            for (int64_t i = 0; i < w->m; i++) {
                double s = 0;
                for (int64_t q = 0; q < w->k; q++)
                    s += x_get(A, w->at, elem(w->ta, i, q, w->lda)) * x_get(B, w->bt, elem(w->tb, q, j, w->ldb));
                double old = beta == 0 ? 0 : x_get(C, w->ct, i + j * w->ldc);
                x_put(C, w->ct, i + j * w->ldc, alpha * s + beta * old);
            }
        }
    }
    if (!w->keep) free(w);
}

static cublasStatus_t x_submit(CUstream s, struct xgemm *w) {
    CUcontext cur = NULL, want = NULL;
    if (s && (cuCtxGetCurrent(&cur) != 0 || cuStreamGetCtx(s, &want) != 0 || cur != want)) {
        pthread_mutex_lock(&mu);
        st_wrong_context++;
        pthread_mutex_unlock(&mu);
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    int status = 0;
    if (s && cuStreamIsCapturing(s, &status) == 0 && status != 0) w->keep = 1;
    pthread_mutex_lock(&mu);
    st_calls++;
    pthread_mutex_unlock(&mu);
    if (cuLaunchHostFunc(s, x_run, w) != 0) {
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t x_gemm(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                             const void *A, int at, int64_t lda, int64_t sa, const void *B, int bt, int64_t ldb,
                             int64_t sb, const void *beta, void *C, int ct, int64_t ldc, int64_t sc, int64_t batch,
                             int compute) {
    if (!live(h, HANDLE_MAGIC)) return CUBLAS_STATUS_NOT_INITIALIZED;
    int scale = x_scale(compute);
    if (scale < 0 || !x_size(at) || !x_size(bt) || !x_size(ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ta < 0 || ta > 2 || tb < 0 || tb > 2 || m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int64_t ra = ta == OP_N ? m : k, rb = tb == OP_N ? k : n;
    if (lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    struct xgemm *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    *w = (struct xgemm){.ta = ta, .tb = tb, .at = at, .bt = bt, .ct = ct, .scale = scale, .m = m, .n = n, .k = k,
                        .lda = lda, .ldb = ldb, .ldc = ldc, .sa = sa, .sb = sb, .sc = sc, .batch = batch,
                        .a = A, .b = B, .c = C};
    if (h->pointer_mode == 1) {
        w->dalpha = alpha;
        w->dbeta = beta;
    } else {
        w->alpha = x_get(alpha, scale, 0);
        w->beta = x_get(beta, scale, 0);
    }
    return x_submit(h->stream, w);
}

cublasStatus_t cublasGemmStridedBatchedEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha,
                                          const void *A, int at, int lda, long long sa, const void *B, int bt, int ldb,
                                          long long sb, const void *beta, void *C, int ct, int ldc, long long sc,
                                          int batch, int compute, int algo) {
    (void)algo;
    return x_gemm(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(struct handle *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                             const void *alpha, const void *A, int at, int64_t lda, long long sa,
                                             const void *B, int bt, int64_t ldb, long long sb, const void *beta,
                                             void *C, int ct, int64_t ldc, long long sc, int64_t batch, int compute,
                                             int algo) {
    (void)algo;
    return x_gemm(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute);
}

/* ===== cuBLASLt: descriptors, layouts, the heuristic and cublasLtMatmul =====
 *
 * A, B, C and D of CUDA_R_32F, R_16F, R_16BF, R_8F_E4M3 or R_8F_E5M2 (each
 * its own; R_64F and the integer types are refused, NOT_SUPPORTED),
 * column- or row-major (CUBLASLT_MATRIX_LAYOUT_ORDER), strided batches
 * (BATCH_COUNT, STRIDED_BATCH_OFFSET), every epilogue of cublasLt.h with
 * the bias (BIAS_DATA_TYPE, BIAS_BATCH_STRIDE) and the aux matrix or ReLU
 * bit mask (EPILOGUE_AUX_POINTER, _LD, _BATCH_STRIDE, _DATA_TYPE), the
 * A/B/C/D scale pointers and AMAX_D, computed in double. GELU is the tanh
 * form. The mask's bit (i, j) is bit (i + j*ld) % 8 of byte (i + j*ld) / 8.
 * The heuristic answers three algorithms, which compute alike: the first
 * asks for all the workspace the preference allows, the second half of
 * it, the third a quarter, so that the workspace size a Matmul is given
 * ("lt_ws_size") says which one it runs. */

enum { X_R_8F_E4M3 = 28, X_R_8F_E5M2 = 29, X_ALGO = 0x5349, X_ALGOS = 3 };

struct desc {
    int compute, scale, ta, tb, epilogue, bias_type, aux_type;
    const void *bias;
    void *aux;
    int64_t aux_ld, aux_stride, bias_stride;
    const float *scale_a, *scale_b, *scale_c, *scale_d;
    float *amax_d;
};

struct layout {
    int type, order;
    uint64_t rows, cols;
    int64_t ld, stride;
    int batch;
};

static double x8_value(uint8_t c, int e5m2) {
    if (e5m2) return x_half_to_float((uint16_t)c << 8);
    int exp = (c >> 3) & 0xf, frac = c & 7;
    if (exp == 0xf && frac == 7) return NAN;
    double v = exp == 0 ? ldexp(frac / 8.0, -6) : ldexp(1 + frac / 8.0, exp - 7);
    return (c & 0x80) ? -v : v;
}

/* x8_code rounds v to the nearest FP8 value, ties to the even code,
 * saturating at the largest finite one. */
static uint8_t x8_code(double v, int e5m2) {
    if (v != v) return e5m2 ? 0x7e : 0x7f;
    uint8_t sign = v < 0 ? 0x80 : 0;
    double a = fabs(v);
    int last = e5m2 ? 0x7b : 0x7e, best = 0;
    for (int c = 1; c <= last; c++) {
        double d = fabs(x8_value((uint8_t)c, e5m2) - a), bd = fabs(x8_value((uint8_t)best, e5m2) - a);
        if (d < bd || (d == bd && !(c & 1))) best = c;
    }
    return sign | (uint8_t)best;
}

static int lt_size(int type) {
    switch (type) {
    case R_32F: return 4;
    case X_R_16F: case X_R_16BF: return 2;
    case X_R_8F_E4M3: case X_R_8F_E5M2: return 1;
    }
    return 0;
}

static double lt_get(const void *p, int type, int64_t i) {
    if (type == X_R_8F_E4M3 || type == X_R_8F_E5M2) return x8_value(((const uint8_t *)p)[i], type == X_R_8F_E5M2);
    return x_get(p, type, i);
}

static void lt_put(void *p, int type, int64_t i, double v) {
    if (type == X_R_8F_E4M3 || type == X_R_8F_E5M2) ((uint8_t *)p)[i] = x8_code(v, type == X_R_8F_E5M2);
    else x_put(p, type, i, v);
}

/* lt_at is the index of element (r, c) of a matrix of layout l. */
static int64_t lt_at(const struct layout *l, int64_t r, int64_t c) { return l->order == 1 ? r * l->ld + c : r + c * l->ld; }

static double gelu_grad(double x) {
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

struct ltwork {
    struct desc d;
    struct layout a, b, c, dd;
    double alpha, beta;
    const void *A, *B, *C;
    void *D;
    int keep;
};

static double lt_op(const struct layout *l, const char *p, int t, int64_t i, int64_t k) {
    return lt_get(p, l->type, t == OP_N ? lt_at(l, i, k) : lt_at(l, k, i));
}

static void lt_run(void *p) {
    struct ltwork *w = p;
    const struct desc *d = &w->d;
    int epi = d->epilogue;
    int64_t m = (int64_t)w->dd.rows, n = (int64_t)w->dd.cols, k = (int64_t)(d->ta == OP_N ? w->a.cols : w->a.rows);
    double sa = d->scale_a ? *d->scale_a : 1, sb = d->scale_b ? *d->scale_b : 1, sc = d->scale_c ? *d->scale_c : 1;
    double sd = d->scale_d ? *d->scale_d : 1, amax = 0;
    int bias_type = d->bias_type >= 0 ? d->bias_type : w->dd.type, aux_type = d->aux_type >= 0 ? d->aux_type : w->dd.type;
    for (int b = 0; b < w->dd.batch; b++) {
        const char *A = (const char *)w->A + b * w->a.stride * lt_size(w->a.type);
        const char *B = (const char *)w->B + b * w->b.stride * lt_size(w->b.type);
        const char *C = (const char *)w->C + b * w->c.stride * lt_size(w->c.type);
        char *D = (char *)w->D + b * w->dd.stride * lt_size(w->dd.type);
        char *bias = (char *)d->bias + b * d->bias_stride * lt_size(bias_type);
        int64_t aux0 = b * d->aux_stride;
        if (epi == 256 || epi == 512) { /* BGRADA, BGRADB: sums over k */
            int64_t len = epi == 256 ? m : n;
            for (int64_t i = 0; i < len; i++) {
                double s = 0;
                for (int64_t q = 0; q < k; q++)
                    s += epi == 256 ? lt_op(&w->a, A, d->ta, i, q) : lt_op(&w->b, B, d->tb, q, i);
                lt_put(bias, bias_type, i, s);
            }
        }
        for (int64_t i = 0; i < m; i++) {
            double grad = 0;
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < k; q++) s += lt_op(&w->a, A, d->ta, i, q) * lt_op(&w->b, B, d->tb, q, j);
                double v = w->alpha * sa * sb * s;
                if (w->beta != 0) v += w->beta * sc * lt_get(C, w->c.type, lt_at(&w->c, i, j));
                int64_t ai = aux0 + i + j * d->aux_ld;
                if (epi & 8) { /* DRELU */
                    if (!((((const uint8_t *)d->aux)[ai / 8] >> (ai % 8)) & 1)) v = 0;
                } else if (epi & 64) { /* DGELU */
                    v *= gelu_grad(lt_get(d->aux, aux_type, ai));
                } else {
                    if (epi & 4) v += lt_get(bias, bias_type, i);
                    if ((epi & 2) && (epi & 128)) { /* RELU_AUX: the mask */
                        uint8_t *mask = (uint8_t *)d->aux + ai / 8;
                        if (v > 0) *mask |= (uint8_t)(1 << (ai % 8));
                        else *mask &= (uint8_t)~(1 << (ai % 8));
                    }
                    if ((epi & 32) && (epi & 128)) lt_put(d->aux, aux_type, ai, v); /* GELU_AUX: the input */
                    if (epi & 2) v = v > 0 ? v : 0;
                    if (epi & 32) v = gelu(v);
                }
                grad += v;
                if (fabs(v) > amax) amax = fabs(v);
                lt_put(D, w->dd.type, lt_at(&w->dd, i, j), v * sd);
            }
            if (epi & 16) lt_put(bias, bias_type, i, grad); /* DRELU_BGRAD, DGELU_BGRAD */
        }
    }
    if (d->amax_d) *d->amax_d = (float)amax;
    if (!w->keep) free(w);
}

cublasStatus_t cublasLtMatmulDescCreate(struct desc **out, int compute, int scale) {
    FAIL_POINT("cublasLtMatmulDescCreate");
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    struct desc *d = calloc(1, sizeof *d);
    if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
    d->compute = compute;
    d->scale = scale;
    d->epilogue = 1; /* CUBLASLT_EPILOGUE_DEFAULT */
    d->bias_type = d->aux_type = -1;
    count(&st_lt_objects, 1);
    *out = d;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(struct desc *d) {
    if (d) count(&st_lt_objects, -1);
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

static int lt_epilogue_ok(int e) {
    static const int known[] = {1, 2, 130, 4, 6, 134, 136, 152, 32, 160, 36, 164, 192, 208, 256, 512};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i] == e) return 1;
    return 0;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(struct desc *d, int attr, const void *buf, size_t size) {
    FAIL_POINT("cublasLtMatmulDescSetAttribute");
    if (!d || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case 3: case 4: case 7: case 22: case 26: /* TRANSA, TRANSB, EPILOGUE, AUX_DATA_TYPE, BIAS_DATA_TYPE */
        if (size != 4) return CUBLAS_STATUS_INVALID_VALUE;
        int v = *(const int *)buf;
        if (attr == 3) d->ta = v;
        if (attr == 4) d->tb = v;
        if (attr == 7) {
            if (!lt_epilogue_ok(v)) return CUBLAS_STATUS_INVALID_VALUE;
            d->epilogue = v;
        }
        if (attr == 22) d->aux_type = v;
        if (attr == 26) d->bias_type = v;
        return CUBLAS_STATUS_SUCCESS;
    case 10: case 12: case 13: /* BIAS_BATCH_STRIDE, EPILOGUE_AUX_LD, _BATCH_STRIDE */
        if (size != 8) return CUBLAS_STATUS_INVALID_VALUE;
        if (attr == 10) d->bias_stride = *(const int64_t *)buf;
        if (attr == 12) d->aux_ld = *(const int64_t *)buf;
        if (attr == 13) d->aux_stride = *(const int64_t *)buf;
        return CUBLAS_STATUS_SUCCESS;
    case 8: case 11: case 17: case 18: case 19: case 20: case 21: { /* pointers */
        if (size != sizeof(void *)) return CUBLAS_STATUS_INVALID_VALUE;
        void *p = *(void *const *)buf;
        if (attr == 8) d->bias = p;
        if (attr == 11) d->aux = p;
        if (attr == 17) d->scale_a = p;
        if (attr == 18) d->scale_b = p;
        if (attr == 19) d->scale_c = p;
        if (attr == 20) d->scale_d = p;
        if (attr == 21) d->amax_d = p;
        return CUBLAS_STATUS_SUCCESS;
    }
    }
    return CUBLAS_STATUS_SUCCESS; /* other attributes (FAST_ACCUM, ...): accepted, unused */
}

cublasStatus_t cublasLtMatrixLayoutCreate(struct layout **out, int type, uint64_t rows, uint64_t cols, int64_t ld) {
    FAIL_POINT("cublasLtMatrixLayoutCreate");
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    struct layout *l = calloc(1, sizeof *l);
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    *l = (struct layout){.type = type, .rows = rows, .cols = cols, .ld = ld, .batch = 1};
    count(&st_lt_objects, 1);
    *out = l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(struct layout *l) {
    if (l) count(&st_lt_objects, -1);
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

/* Attributes: 1 ORDER (int32: 0 col, 1 row), 5 BATCH_COUNT (int32),
 * 6 STRIDED_BATCH_OFFSET (int64). */
cublasStatus_t cublasLtMatrixLayoutSetAttribute(struct layout *l, int attr, const void *buf, size_t size) {
    FAIL_POINT("cublasLtMatrixLayoutSetAttribute");
    if (!l || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case 1: case 5:
        if (size != 4) return CUBLAS_STATUS_INVALID_VALUE;
        if (attr == 1) {
            int o = *(const int *)buf;
            if (o != 0 && o != 1) return CUBLAS_STATUS_NOT_SUPPORTED;
            l->order = o;
        } else {
            l->batch = *(const int *)buf;
            if (l->batch < 1) return CUBLAS_STATUS_INVALID_VALUE;
        }
        return CUBLAS_STATUS_SUCCESS;
    case 6:
        if (size != 8) return CUBLAS_STATUS_INVALID_VALUE;
        l->stride = *(const int64_t *)buf;
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

static int lt_shape_ok(struct desc *d, struct layout *a, struct layout *b, struct layout *c, struct layout *dd) {
    uint64_t m = dd->rows, n = dd->cols;
    uint64_t am = d->ta == OP_N ? a->rows : a->cols, ak = d->ta == OP_N ? a->cols : a->rows;
    uint64_t bk = d->tb == OP_N ? b->rows : b->cols, bn = d->tb == OP_N ? b->cols : b->rows;
    if (am != m || bn != n || ak != bk || c->rows != m || c->cols != n || c->ld != dd->ld) return 0;
    if (!lt_size(a->type) || !lt_size(b->type) || !lt_size(c->type) || !lt_size(dd->type)) return 0;
    if (a->order != dd->order || b->order != dd->order || c->order != dd->order) return 0;
    if (a->batch != dd->batch || b->batch != dd->batch || c->batch != dd->batch) return 0;
    /* FP8 inputs: A transposed and B not, as on Hopper */
    int fp8 = a->type == X_R_8F_E4M3 || a->type == X_R_8F_E5M2 || b->type == X_R_8F_E4M3 || b->type == X_R_8F_E5M2;
    if (fp8 && (d->ta != OP_T || d->tb != OP_N)) return 0;
    return 1;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(struct lt *l, struct desc *d, struct layout *a, struct layout *b,
                                              struct layout *c, struct layout *dd, struct pref *p, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *returned) {
    if (!l || l->magic != LT_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!d || !a || !b || !c || !dd || !p || !results || !returned || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    FAIL_POINT("cublasLtMatmulAlgoGetHeuristic");
    pthread_mutex_lock(&mu);
    st_heuristics++;
    pthread_mutex_unlock(&mu);
    *returned = 0;
    if (!lt_shape_ok(d, a, b, c, dd)) return CUBLAS_STATUS_NOT_SUPPORTED;
    int n = requested < X_ALGOS ? requested : X_ALGOS;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].algo.data[0] = X_ALGO + i;
        results[i].workspaceSize = p->max_workspace >> i; /* the first takes all it may */
        results[i].wavesCount = 1 + i;
    }
    *returned = n;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(struct lt *l, struct desc *d, const void *alpha, const void *A, struct layout *ad,
                              const void *B, struct layout *bd, const void *beta, const void *C, struct layout *cd,
                              void *D, struct layout *dd, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsSize,
                              CUstream s) {
    if (!l || l->magic != LT_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    FAIL_POINT("cublasLtMatmul");
    if (wsSize > 0 && !ws) return CUBLAS_STATUS_INVALID_VALUE; /* it would write through NULL */
    pthread_mutex_lock(&mu);
    st_lt_ws_size = (long long)wsSize;
    st_lt_ws_given = ws != NULL;
    pthread_mutex_unlock(&mu);
    if (!d || !alpha || !beta || !ad || !bd || !cd || !dd) return CUBLAS_STATUS_INVALID_VALUE;
    if (!lt_shape_ok(d, ad, bd, cd, dd)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (algo && (algo->data[0] < X_ALGO || algo->data[0] >= X_ALGO + X_ALGOS)) return CUBLAS_STATUS_INVALID_VALUE;
    int epi = d->epilogue;
    if (((epi & 4) || (epi & 16) || epi == 256 || epi == 512) && !d->bias) return CUBLAS_STATUS_INVALID_VALUE;
    if ((epi & 128) && (!d->aux || d->aux_ld < (int64_t)dd->rows)) return CUBLAS_STATUS_INVALID_VALUE;
    if ((epi & 128) && dd->order != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
    struct ltwork *w = calloc(1, sizeof *w);
    if (!w) return CUBLAS_STATUS_ALLOC_FAILED;
    int scale = d->scale; /* the type of alpha and beta */
    *w = (struct ltwork){.d = *d, .a = *ad, .b = *bd, .c = *cd, .dd = *dd, .alpha = x_get(alpha, scale, 0),
                         .beta = x_get(beta, scale, 0), .A = A, .B = B, .C = C, .D = D};
    CUcontext cur = NULL, want = NULL;
    if (s && (cuCtxGetCurrent(&cur) != 0 || cuStreamGetCtx(s, &want) != 0 || cur != want)) {
        count(&st_wrong_context, 1);
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    int status = 0;
    if (s && cuStreamIsCapturing(s, &status) == 0 && status != 0) w->keep = 1;
    count(&st_calls, 1);
    if (cuLaunchHostFunc(s, lt_run, w) != 0) {
        free(w);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}
