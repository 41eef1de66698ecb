//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// vectoradd in C through the driver API, the baseline of main.go: adds two
// vectors of 50,000 floats on the GPU. The timed part is the second of two
// identical passes (copy a and b to the device from pageable memory, launch,
// copy c back, wait), so that the first pass pays for lazy module loading.
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
	const int n = 50000, threads = 256, blocks = (n + threads - 1) / threads;
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "vec_add"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	size_t bytes = n * sizeof(float);
	float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
	for (int i = 0; i < n; i++) a[i] = rnd();
	for (int i = 0; i < n; i++) b[i] = rnd();
	CUdeviceptr da, db, dc;
	CK(cuMemAllocAsync(&da, bytes, s));
	CK(cuMemAllocAsync(&db, bytes, s));
	CK(cuMemAllocAsync(&dc, bytes, s));
	double ms = 0;
	for (int pass = 0; pass < 2; pass++) {
		memset(c, 0, bytes);
		double t0 = now_ms();
		CK(cuMemcpyHtoDAsync(da, a, bytes, s));
		CK(cuMemcpyHtoDAsync(db, b, bytes, s));
		int nn = n;
		void *args[] = {&da, &db, &dc, &nn};
		CK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, s, args, NULL));
		CK(cuMemcpyDtoHAsync(c, dc, bytes, s));
		CK(cuStreamSynchronize(s));
		ms = now_ms() - t0;
	}
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) bad++;
	printf("vectoradd: %d elements, %d blocks of %d threads\n", n, blocks, threads);
	printf("time: %.3f ms\n", ms);
	CK(cuMemFreeAsync(da, s));
	CK(cuMemFreeAsync(db, s));
	CK(cuMemFreeAsync(dc, s));
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	if (bad) {
		printf("check: FAILED (%d wrong sums)\n", bad);
		return 1;
	}
	printf("check: PASSED\n");
	return 0;
}
