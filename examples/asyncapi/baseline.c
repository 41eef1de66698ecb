//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// asyncapi in C through the driver API, the baseline of main.go: issues a
// copy of 16 Mi ints from pinned host memory, a kernel that adds 26 to each
// and the copy back, records an event, and counts how often the CPU could
// ask whether the event had completed while the GPU worked. The timed part
// is from the first call until the event is seen complete.
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
	enum { n = 16 << 20, value = 26, threads = 512 };
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "add_value"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	int *a = pinned(n * sizeof(int));
	CUdeviceptr d;
	CK(cuMemAllocAsync(&d, n * sizeof(int), s));
	CK(cuMemsetD8Async(d, 0xff, n * sizeof(int), s));
	CK(cuStreamSynchronize(s));
	CUevent start, stop;
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	int v = value, nn = n;
	void *args[] = {&d, &v, &nn};

	double t0 = now_ms();
	CK(cuEventRecord(start, s));
	CK(cuMemcpyHtoDAsync(d, a, n * sizeof(int), s));
	CK(cuLaunchKernel(f, n / threads, 1, 1, threads, 1, 1, 0, s, args, NULL));
	CK(cuMemcpyDtoHAsync(a, d, n * sizeof(int), s));
	CK(cuEventRecord(stop, s));
	double issued = now_ms() - t0;
	unsigned long polls = 0;
	CUresult r;
	while ((r = cuEventQuery(stop)) == CUDA_ERROR_NOT_READY) polls++;
	CK(r);
	double ms = now_ms() - t0;
	float gpu;
	CK(cuEventElapsedTime(&gpu, start, stop));

	int ok = 1;
	for (int i = 0; i < n; i++)
		if (a[i] != value) {
			printf("a[%d] = %d, want %d\n", i, a[i], value);
			ok = 0;
			break;
		}
	printf("asyncapi: %d ints; issuing took %.3f ms, the GPU %.3f ms; the CPU polled %lu times meanwhile\n", n,
	       issued, gpu, polls);
	printf("time: %.3f ms\n", ms);
	CK(cuEventDestroy(start));
	CK(cuEventDestroy(stop));
	CK(cuMemFreeAsync(d, s));
	unpin(a);
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	printf("check: %s\n", ok ? "PASSED" : "FAILED");
	return ok ? 0 : 1;
}
