// fftrand.c is the C half of the cuFFT and cuRAND rows (fftrand.go): each
// pf_* function runs one round of n calls on the plan or generator and
// stream the Go half made, then waits for the stream, and returns the
// first failure or 0. The libraries are opened by the paths the Go process
// loaded, so both halves call the same copies (and the same plan, with the
// same work area).
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUstream;
typedef void *curandGenerator_t;

static CUresult (*streamSynchronize)(CUstream);
static int (*execC2C)(int, void *, void *, int);
static int (*execR2C)(int, void *, void *);
static int (*normal)(curandGenerator_t, float *, size_t, float, float);

// pf_init opens the driver, cuFFT and cuRAND at the given paths; 0 when
// every function was found.
int pf_init(const char *cuda, const char *cufft, const char *curand) {
	void *d = dlopen(cuda, RTLD_NOW | RTLD_LOCAL), *f = dlopen(cufft, RTLD_NOW | RTLD_LOCAL),
	     *r = dlopen(curand, RTLD_NOW | RTLD_LOCAL);
	if (!d || !f || !r) return 1;
	streamSynchronize = (CUresult(*)(CUstream))dlsym(d, "cuStreamSynchronize");
	execC2C = (int (*)(int, void *, void *, int))dlsym(f, "cufftExecC2C");
	execR2C = (int (*)(int, void *, void *))dlsym(f, "cufftExecR2C");
	normal = (int (*)(curandGenerator_t, float *, size_t, float, float))dlsym(r, "curandGenerateNormal");
	return !streamSynchronize || !execC2C || !execR2C || !normal;
}

static long long now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// pf_c2c: n forward C2C transforms of in into out, then a wait; *enqueue
// gets the nanoseconds the n calls took before the wait.
int pf_c2c(int plan, CUstream s, uintptr_t in, uintptr_t out, int n, long long *enqueue) {
	long long t0 = now_ns();
	for (int i = 0; i < n; i++) {
		int st = execC2C(plan, (void *)in, (void *)out, -1);
		if (st) return st;
	}
	*enqueue = now_ns() - t0;
	return streamSynchronize(s);
}

// pf_r2c: n R2C transforms, then a wait.
int pf_r2c(int plan, CUstream s, uintptr_t in, uintptr_t out, int n) {
	for (int i = 0; i < n; i++) {
		int st = execR2C(plan, (void *)in, (void *)out);
		if (st) return st;
	}
	return streamSynchronize(s);
}

// pf_normal: n times count normal floats (mean 0, deviation 1), then a
// wait.
int pf_normal(curandGenerator_t g, CUstream s, uintptr_t out, size_t count, int n) {
	for (int i = 0; i < n; i++) {
		int st = normal(g, (float *)out, count, 0.0f, 1.0f);
		if (st) return st;
	}
	return streamSynchronize(s);
}
