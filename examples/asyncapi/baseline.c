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

#include "../baseline.h"

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
