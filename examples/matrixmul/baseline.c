//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// matrixmul in C through the driver API, the baseline of main.go: multiplies
// a 320×320 matrix of 1.0 by a 320-row, 640-column matrix of 0.01 with 32×32
// tiles. One launch warms up; the timed part is 300 launches and the wait
// for them.
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

int main(int argc, char **argv) {
	const int tile = 32, wa = 320, ha = 320, wb = 640, iters = 300;
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "mat_mul"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	size_t na = (size_t)wa * ha, nb = (size_t)wb * wa, nc = (size_t)wb * ha;
	float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
	for (size_t i = 0; i < na; i++) a[i] = 1.0f;
	for (size_t i = 0; i < nb; i++) b[i] = 0.01f;
	CUdeviceptr da, db, dc;
	CK(cuMemAllocAsync(&da, na * 4, s));
	CK(cuMemAllocAsync(&db, nb * 4, s));
	CK(cuMemAllocAsync(&dc, nc * 4, s));
	CK(cuMemcpyHtoDAsync(da, a, na * 4, s));
	CK(cuMemcpyHtoDAsync(db, b, nb * 4, s));
	int wa_ = wa, wb_ = wb;
	void *args[] = {&dc, &da, &db, &wa_, &wb_};
	CK(cuLaunchKernel(f, wb / tile, ha / tile, 1, tile, tile, 1, 0, s, args, NULL));
	CK(cuStreamSynchronize(s));
	CUevent start, stop;
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	double t0 = now_ms();
	CK(cuEventRecord(start, s));
	for (int i = 0; i < iters; i++) CK(cuLaunchKernel(f, wb / tile, ha / tile, 1, tile, tile, 1, 0, s, args, NULL));
	CK(cuEventRecord(stop, s));
	CK(cuStreamSynchronize(s));
	double ms = now_ms() - t0;
	float gpu;
	CK(cuEventElapsedTime(&gpu, start, stop));
	CK(cuEventDestroy(start));
	CK(cuEventDestroy(stop));
	CK(cuMemcpyDtoHAsync(c, dc, nc * 4, s));
	CK(cuStreamSynchronize(s));
	double flops = 2.0 * wa * ha * wb;
	printf("matrixmul: A %dx%d, B %dx%d, %d launches: %.1f GFLOP/s, %.4f ms a launch\n", ha, wa, wa, wb, iters,
	       flops * iters / (ms * 1e6), ms / iters);
	printf("between events on the stream: %.3f ms\n", gpu);
	printf("time: %.3f ms\n", ms);
	int bad = 0;
	double want = wa * 0.01;
	for (size_t i = 0; i < nc; i++)
		if (fabs(c[i] - want) / fabs(want) / wa > 1e-6) bad++;
	CK(cuMemFreeAsync(da, s));
	CK(cuMemFreeAsync(db, s));
	CK(cuMemFreeAsync(dc, s));
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	if (bad) {
		printf("check: FAILED (%d wrong elements)\n", bad);
		return 1;
	}
	printf("check: PASSED\n");
	return 0;
}
