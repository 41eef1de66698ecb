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

#include "../baseline.h"

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
