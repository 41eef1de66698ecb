// What the samples' C baselines share: error checks, the clock, loading
// the PTX, the context, pinned memory and the Go programs' pseudo-random
// numbers. Each baseline.c includes it as "../baseline.h".

#ifndef PURECUDA_EXAMPLES_BASELINE_H
#define PURECUDA_EXAMPLES_BASELINE_H

#include <cuda.h>
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

#endif
