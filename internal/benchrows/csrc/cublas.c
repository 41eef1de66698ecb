// cublas.c is the C half of the cuBLAS rows (cublas.go): each pb_* function
// runs one round of n calls of a cuBLAS function on the handle and stream
// the Go half uses, then waits for the stream, and returns the first
// failure or 0. The libraries are opened by the paths the Go process
// loaded, so both halves call the same copies.
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUstream;
typedef void *cublasHandle_t;

static CUresult (*streamSynchronize)(CUstream);
static CUresult (*ctxGetCurrent)(void **);
static int (*sgemm)(cublasHandle_t, int, int, int, int, int, const float *, const float *, int, const float *, int,
                    const float *, float *, int);
static int (*gemmEx)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                     int, const void *, void *, int, int, int, int);

// pb_init opens the driver and cuBLAS at the given paths; 0 when every
// function was found.
int pb_init(const char *cuda, const char *cublas) {
	void *d = dlopen(cuda, RTLD_NOW | RTLD_LOCAL), *b = dlopen(cublas, RTLD_NOW | RTLD_LOCAL);
	if (!d || !b) return 1;
	streamSynchronize = (CUresult(*)(CUstream))dlsym(d, "cuStreamSynchronize");
	ctxGetCurrent = (CUresult(*)(void **))dlsym(d, "cuCtxGetCurrent");
	sgemm = (int (*)(cublasHandle_t, int, int, int, int, int, const float *, const float *, int, const float *, int,
	                 const float *, float *, int))dlsym(b, "cublasSgemm_v2");
	gemmEx = (int (*)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
	                  int, const void *, void *, int, int, int, int))dlsym(b, "cublasGemmEx");
	return !streamSynchronize || !ctxGetCurrent || !sgemm || !gemmEx;
}

static long long now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// pb_sgemm: n times C = A*B (m x m matrices, column-major), then a wait;
// *enqueue gets the nanoseconds the n calls took before the wait.
int pb_sgemm(cublasHandle_t h, CUstream s, int m, uintptr_t a, uintptr_t b, uintptr_t c, int n, long long *enqueue) {
	const float one = 1, zero = 0;
	long long t0 = now_ns();
	for (int i = 0; i < n; i++) {
		int st = sgemm(h, 0, 0, m, m, m, &one, (const float *)a, m, (const float *)b, m, &zero, (float *)c, m);
		if (st) return st;
	}
	*enqueue = now_ns() - t0;
	return streamSynchronize(s);
}

// pb_gemmex: n times C = A*B with A, B and C of cudaDataType t and
// compute type compute (float32 scaling), then a wait.
int pb_gemmex(cublasHandle_t h, CUstream s, int m, uintptr_t a, uintptr_t b, uintptr_t c, int t, int compute, int n) {
	const float one = 1, zero = 0;
	for (int i = 0; i < n; i++) {
		int st = gemmEx(h, 0, 0, m, m, m, &one, (const void *)a, t, m, (const void *)b, t, m, &zero, (void *)c, t, m,
		                compute, -1);
		if (st) return st;
	}
	return streamSynchronize(s);
}

// The call-path rows of the small SGEMM (callpath.go): pb_sgemm1 makes one
// call, for Go to call once a multiplication; pb_sgemm_var is pb_sgemm
// with, before each call, a cuCtxGetCurrent (ctx != 0: what package cuda
// asks before a call) and after it a busy wait of gap ns.
int pb_sgemm1(cublasHandle_t h, int m, uintptr_t a, uintptr_t b, uintptr_t c) {
	const float one = 1, zero = 0;
	return sgemm(h, 0, 0, m, m, m, &one, (const float *)a, m, (const float *)b, m, &zero, (float *)c, m);
}

int pb_sgemm_var(cublasHandle_t h, CUstream s, int m, uintptr_t a, uintptr_t b, uintptr_t c, int n, int ctx, long gap,
                 long long *enqueue) {
	const float one = 1, zero = 0;
	long long t0 = now_ns();
	for (int i = 0; i < n; i++) {
		if (ctx) {
			void *cur;
			int r = ctxGetCurrent(&cur);
			if (r) return r;
		}
		int st = sgemm(h, 0, 0, m, m, m, &one, (const float *)a, m, (const float *)b, m, &zero, (float *)c, m);
		if (st) return st;
		if (gap > 0) {
			long long end = now_ns() + gap;
			while (now_ns() < end) {
			}
		}
	}
	*enqueue = now_ns() - t0;
	return streamSynchronize(s);
}
