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

#include "../baseline.h"

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
