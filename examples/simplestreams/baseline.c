//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// simplestreams in C through the driver API, the baseline of main.go: 16 Mi
// ints on the device, 10 repetitions of (a kernel that adds 5 to each, 5
// times; copy the array back into pinned host memory, as 4 copies of a
// quarter each, as main.go does), first on one stream, then split into 4
// chunks on 4 streams so that one chunk's copy overlaps another's kernel.
// Both parts are timed; "time:" is the 4-stream part.
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

static int check(const int *a, int n, int want) {
	for (int i = 0; i < n; i++)
		if (a[i] != want) {
			printf("a[%d] = %d, want %d\n", i, a[i], want);
			return 0;
		}
	return 1;
}

int main(int argc, char **argv) {
	enum { n = 16 << 20, nstreams = 4, chunk = n / nstreams, reps = 10, rounds = 5, step = 5, threads = 512 };
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "add_repeat"));
	CUstream st[nstreams];
	for (int i = 0; i < nstreams; i++) CK(cuStreamCreate(&st[i], CU_STREAM_NON_BLOCKING));
	int *a = pinned(n * sizeof(int));
	CUdeviceptr d, dstep;
	CK(cuMemAllocAsync(&d, n * sizeof(int), st[0]));
	CK(cuMemAllocAsync(&dstep, sizeof(int), st[0]));
	int stepv = step;
	CK(cuMemcpyHtoDAsync(dstep, &stepv, sizeof stepv, st[0]));
	int rounds_ = rounds;
	// Warm up: one launch over the whole array.
	{
		int nn = n;
		void *args[] = {&d, &dstep, &rounds_, &nn};
		CK(cuLaunchKernel(f, n / threads, 1, 1, threads, 1, 1, 0, st[0], args, NULL));
	}
	CK(cuMemsetD32Async(d, 0, n, st[0]));
	CK(cuStreamSynchronize(st[0]));

	double t0 = now_ms();
	for (int r = 0; r < reps; r++) {
		int nn = n;
		void *args[] = {&d, &dstep, &rounds_, &nn};
		CK(cuLaunchKernel(f, n / threads, 1, 1, threads, 1, 1, 0, st[0], args, NULL));
		for (int i = 0; i < nstreams; i++)
			CK(cuMemcpyDtoHAsync(a + (size_t)i * chunk, d + (size_t)i * chunk * sizeof(int), chunk * sizeof(int),
			                     st[0]));
	}
	CK(cuStreamSynchronize(st[0]));
	double ms1 = now_ms() - t0;
	int ok = check(a, n, step * rounds * reps);

	CK(cuMemsetD32Async(d, 0, n, st[0]));
	CK(cuStreamSynchronize(st[0]));
	memset(a, 0, n * sizeof(int));
	t0 = now_ms();
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < nstreams; i++) {
			CUdeviceptr dc = d + (size_t)i * chunk * sizeof(int);
			int nn = chunk;
			void *args[] = {&dc, &dstep, &rounds_, &nn};
			CK(cuLaunchKernel(f, chunk / threads, 1, 1, threads, 1, 1, 0, st[i], args, NULL));
			CK(cuMemcpyDtoHAsync(a + (size_t)i * chunk, dc, chunk * sizeof(int), st[i]));
		}
	for (int i = 0; i < nstreams; i++) CK(cuStreamSynchronize(st[i]));
	double ms4 = now_ms() - t0;
	ok = check(a, n, step * rounds * reps) && ok;

	printf("simplestreams: %d ints, %d repetitions, %d rounds a kernel\n", n, reps, rounds);
	printf("1 stream:  %.3f ms (%.3f ms a repetition)\n", ms1, ms1 / reps);
	printf("%d streams: %.3f ms (%.3f ms a repetition)\n", nstreams, ms4, ms4 / reps);
	printf("time: %.3f ms\n", ms4);
	CK(cuMemFreeAsync(d, st[0]));
	CK(cuMemFreeAsync(dstep, st[0]));
	unpin(a);
	for (int i = 0; i < nstreams; i++) CK(cuStreamDestroy(st[i]));
	CK(cuModuleUnload(mod));
	printf("check: %s\n", ok ? "PASSED" : "FAILED");
	return ok ? 0 : 1;
}
