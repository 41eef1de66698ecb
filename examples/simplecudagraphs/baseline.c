//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// simplecudagraphs in C through the driver API, the baseline of main.go:
// captures into a graph the sum of 16 Mi floats (copy in from pinned memory,
// zero the partial sums, 512 blocks of partial sums, zero the total, one
// block's total, copy the total back) and a host function that checks the
// total, then launches the graph 3 times. The timed part is the 3 launches
// and the wait for them.
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

enum { n = 1 << 24, blocks = 512, threads = 512, launches = 3 };

static double *total, want;
static int passed, failed;

static void CUDA_CB check_total(void *arg) {
	(void)arg;
	if (*total == want)
		passed++;
	else {
		failed++;
		printf("the graph's total is %.17g, want %.17g\n", *total, want);
	}
}

int main(int argc, char **argv) {
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction partial, whole;
	CK(cuModuleGetFunction(&partial, mod, "partial_sums"));
	CK(cuModuleGetFunction(&whole, mod, "total_sum"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	float *in = pinned(n * sizeof(float));
	total = pinned(sizeof(double));
	want = 0;
	for (uint32_t i = 0; i < n; i++) {
		in[i] = (float)((i * 37u + 11u) % 256u) / 256.0f;
		want += in[i];
	}
	CUdeviceptr din, dpart, dtotal;
	CK(cuMemAllocAsync(&din, n * sizeof(float), s));
	CK(cuMemAllocAsync(&dpart, blocks * sizeof(double), s));
	CK(cuMemAllocAsync(&dtotal, sizeof(double), s));
	CK(cuStreamSynchronize(s));
	unsigned long long nn = n, nb = blocks;
	void *pargs[] = {&din, &nn, &dpart};
	void *targs[] = {&dpart, &nb, &dtotal};

	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuMemcpyHtoDAsync(din, in, n * sizeof(float), s));
	CK(cuMemsetD32Async(dpart, 0, blocks * 2, s));
	CK(cuLaunchKernel(partial, blocks, 1, 1, threads, 1, 1, 0, s, pargs, NULL));
	CK(cuMemsetD32Async(dtotal, 0, 2, s));
	CK(cuLaunchKernel(whole, 1, 1, 1, threads, 1, 1, 0, s, targs, NULL));
	CK(cuMemcpyDtoHAsync(total, dtotal, sizeof(double), s));
	CK(cuLaunchHostFunc(s, check_total, NULL));
	CUgraph g;
	CK(cuStreamEndCapture(s, &g));
	size_t nodes;
	CK(cuGraphGetNodes(g, NULL, &nodes));
	CUgraphExec e;
	CK(cuGraphInstantiate(&e, g, 0));

	CUevent start, stop;
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	double t0 = now_ms();
	CK(cuEventRecord(start, s));
	for (int i = 0; i < launches; i++) CK(cuGraphLaunch(e, s));
	CK(cuEventRecord(stop, s));
	CK(cuStreamSynchronize(s));
	double ms = now_ms() - t0;
	float gpu;
	CK(cuEventElapsedTime(&gpu, start, stop));
	CK(cuEventDestroy(start));
	CK(cuEventDestroy(stop));

	printf("simplecudagraphs: a graph of %zu nodes summing %d floats, launched %d times\n", nodes, n, launches);
	printf("between events on the stream: %.3f ms\n", gpu);
	printf("time: %.3f ms\n", ms);
	CK(cuGraphExecDestroy(e));
	CK(cuGraphDestroy(g));
	CK(cuMemFreeAsync(din, s));
	CK(cuMemFreeAsync(dpart, s));
	CK(cuMemFreeAsync(dtotal, s));
	unpin(in);
	unpin(total);
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	int ok = passed == launches && failed == 0;
	printf("check: %s (%d of %d host checks passed)\n", ok ? "PASSED" : "FAILED", passed, launches);
	return ok ? 0 : 1;
}
