//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// simplezerocopy in C through the driver API, the baseline of main.go: adds
// two vectors of 1 Mi floats that stay in host memory, registered and mapped
// into the device's address space, so that the kernel reads and writes them
// across the bus with no copies. One launch warms up; the timed part is one
// launch and the wait for it.
//
//	gcc -O2 -o baseline baseline.c -lcuda && ./baseline kernels.ptx

#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// CK stops the program with the failing call's name and the driver's error name.
#define CK(call)                                                                      \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		if (r_ != CUDA_SUCCESS) {                                             \
			const char *s_ = "unknown error";                             \
			cuGetErrorName(r_, &s_);                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_); \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

// now_ms reads a monotonic clock in milliseconds.
static inline double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// load_module reads the PTX file at path (NUL-terminated for the driver) and
// loads it into the current context.
static inline CUmodule load_module(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = malloc(n + 1);
	if (fread(text, 1, n, f) != (size_t)n) {
		fprintf(stderr, "%s: short read\n", path);
		exit(1);
	}
	text[n] = 0;
	fclose(f);
	CUmodule m;
	CK(cuModuleLoadData(&m, text));
	free(text);
	return m;
}

// setup makes device 0's primary context current on this thread.
static inline CUcontext setup(void) {
	CUdevice dev;
	CUcontext ctx;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	return ctx;
}

// pinned allocates n bytes of page-aligned host memory and registers it
// with the driver, mapped and portable, as hostmem.Wrap does for Go memory.
static inline void *pinned(size_t n) {
	size_t size = (n + 4095) / 4096 * 4096;
	void *p = aligned_alloc(4096, size);
	if (!p) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(p, 0, size);
	CK(cuMemHostRegister(p, size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
	return p;
}

// unpin unregisters and frees memory from pinned.
static inline void unpin(void *p) {
	CK(cuMemHostUnregister(p));
	free(p);
}

// rnd is the examples' pseudo-random generator (a 32-bit LCG), the same in
// the Go programs: a value in [0, 1).
static uint32_t seed = 1;
static inline float rnd(void) {
	seed = seed * 1664525u + 1013904223u;
	return (float)(seed >> 8) / 16777216.0f;
}

int main(int argc, char **argv) {
	enum { n = 1 << 20, threads = 256 };
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "mapped_add"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	float *a = pinned(n * 4), *b = pinned(n * 4), *c = pinned(n * 4);
	for (int i = 0; i < n; i++) a[i] = rnd();
	for (int i = 0; i < n; i++) b[i] = rnd();
	CUdeviceptr da, db, dc;
	CK(cuMemHostGetDevicePointer(&da, a, 0));
	CK(cuMemHostGetDevicePointer(&db, b, 0));
	CK(cuMemHostGetDevicePointer(&dc, c, 0));
	int nn = n;
	void *args[] = {&da, &db, &dc, &nn};
	CK(cuLaunchKernel(f, (n + threads - 1) / threads, 1, 1, threads, 1, 1, 0, s, args, NULL));
	CK(cuStreamSynchronize(s));
	memset(c, 0, n * 4);
	double t0 = now_ms();
	CK(cuLaunchKernel(f, (n + threads - 1) / threads, 1, 1, threads, 1, 1, 0, s, args, NULL));
	CK(cuStreamSynchronize(s));
	double ms = now_ms() - t0;
	double err = 0, ref = 0;
	for (int i = 0; i < n; i++) {
		double want = (double)a[i] + b[i];
		err += (want - c[i]) * (want - c[i]);
		ref += want * want;
	}
	double rel = sqrt(err) / sqrt(ref);
	printf("simplezerocopy: %d floats in mapped host memory, relative L2 error %.3g\n", n, rel);
	printf("time: %.3f ms\n", ms);
	unpin(a);
	unpin(b);
	unpin(c);
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	int ok = rel < 1e-6;
	printf("check: %s\n", ok ? "PASSED" : "FAILED");
	return ok ? 0 : 1;
}
