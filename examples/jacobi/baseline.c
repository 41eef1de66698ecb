//go:build ignore

// (The build constraint above keeps the go command from taking this file
// for cgo source.)
//
// jacobi in C through the driver API, the baseline of main.go: solves a
// 512×512 diagonally dominant system by Jacobi iteration until the sum of
// |x_new - x| falls below 1e-2 (3,129 sweeps on the CPU), at most 10,000.
// Every sweep is captured again (zero the difference, the sweep from one x
// buffer into the other, copy the difference into pinned host memory), the
// executable graph updated in place, launched and waited for: what
// graph.Cached does. The timed part is that loop.
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

enum { n = 512, max_sweeps = 10000, threads = 256 };
static const double tol = 1e-2;

// make_system fills a (diagonal = 1 + the row's other entries) and b = 2n.
static void make_system(float *a, double *b) {
	for (int i = 0; i < n; i++) {
		float s = 0;
		for (int j = 0; j < n; j++)
			if (j != i) {
				a[i * n + j] = rnd();
				s += a[i * n + j];
			}
		a[i * n + i] = s + 1.0f;
		b[i] = 2.0 * n;
	}
}

// cpu_jacobi runs the same iteration on the CPU into x; it returns the
// number of sweeps.
static int cpu_jacobi(const float *a, const double *b, double *x) {
	double *next = calloc(n, sizeof(double));
	memset(x, 0, n * sizeof(double));
	int k;
	for (k = 1; k <= max_sweeps; k++) {
		double diff = 0;
		for (int i = 0; i < n; i++) {
			double acc = 0;
			for (int j = 0; j < n; j++)
				if (j != i) acc += (double)a[i * n + j] * x[j];
			next[i] = (b[i] - acc) / a[i * n + i];
			diff += fabs(next[i] - x[i]);
		}
		memcpy(x, next, n * sizeof(double));
		if (diff < tol) break;
	}
	free(next);
	return k;
}

int main(int argc, char **argv) {
	setup();
	CUmodule mod = load_module(argc > 1 ? argv[1] : "kernels.ptx");
	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, "jacobi_step"));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	float *a = malloc(n * n * sizeof(float));
	double *b = malloc(n * sizeof(double)), *x = malloc(n * sizeof(double)), *ref = malloc(n * sizeof(double));
	make_system(a, b);
	double *diff = pinned(sizeof(double));
	CUdeviceptr da, db, dx[2], ddiff;
	CK(cuMemAllocAsync(&da, n * n * sizeof(float), s));
	CK(cuMemAllocAsync(&db, n * sizeof(double), s));
	CK(cuMemAllocAsync(&dx[0], n * sizeof(double), s));
	CK(cuMemAllocAsync(&dx[1], n * sizeof(double), s));
	CK(cuMemAllocAsync(&ddiff, sizeof(double), s));
	CK(cuMemcpyHtoDAsync(da, a, n * n * sizeof(float), s));
	CK(cuMemcpyHtoDAsync(db, b, n * sizeof(double), s));
	CK(cuMemsetD32Async(dx[0], 0, n * 2, s));
	CK(cuStreamSynchronize(s));

	CUgraphExec e = NULL;
	int sweeps = 0, updates = 0, nn = n;
	double submit = 0; // capture, update, launch
	double t0 = now_ms();
	for (int k = 0; k < max_sweeps; k++) {
		double t1 = now_ms();
		CUdeviceptr in = dx[k % 2], out = dx[(k + 1) % 2];
		void *args[] = {&da, &db, &in, &out, &ddiff, &nn};
		CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
		CK(cuMemsetD32Async(ddiff, 0, 2, s));
		CK(cuLaunchKernel(f, n * 32 / threads, 1, 1, threads, 1, 1, 0, s, args, NULL));
		CK(cuMemcpyDtoHAsync(diff, ddiff, sizeof(double), s));
		CUgraph g;
		CK(cuStreamEndCapture(s, &g));
		if (e == NULL)
			CK(cuGraphInstantiate(&e, g, 0));
		else {
			CUgraphExecUpdateResultInfo info;
			CK(cuGraphExecUpdate(e, g, &info));
			updates++;
		}
		CK(cuGraphDestroy(g));
		CK(cuGraphLaunch(e, s));
		submit += now_ms() - t1;
		CK(cuStreamSynchronize(s));
		sweeps = k + 1;
		if (*diff < tol) break;
	}
	double ms = now_ms() - t0;
	CK(cuMemcpyDtoHAsync(x, dx[sweeps % 2], n * sizeof(double), s));
	CK(cuStreamSynchronize(s));

	int cpu = cpu_jacobi(a, b, ref);
	double worst = 0;
	for (int i = 0; i < n; i++)
		if (fabs(x[i] - ref[i]) > worst) worst = fabs(x[i] - ref[i]);
	printf("jacobi: %dx%d, %d sweeps on the GPU (%d graph updates in place), %d on the CPU, largest difference %.3g\n",
	       n, n, sweeps, updates, cpu, worst);
	printf("a sweep: %.2f us to capture, update and launch, %.2f us the rest (wait, read)\n", submit * 1e3 / sweeps,
	       (ms - submit) * 1e3 / sweeps);
	printf("time: %.3f ms (%.2f us a sweep)\n", ms, ms * 1e3 / sweeps);
	CK(cuGraphExecDestroy(e));
	CK(cuMemFreeAsync(da, s));
	CK(cuMemFreeAsync(db, s));
	CK(cuMemFreeAsync(dx[0], s));
	CK(cuMemFreeAsync(dx[1], s));
	CK(cuMemFreeAsync(ddiff, s));
	unpin(diff);
	CK(cuStreamDestroy(s));
	CK(cuModuleUnload(mod));
	int ok = sweeps < max_sweeps && abs(sweeps - cpu) <= 1 && worst < 1e-3;
	printf("check: %s\n", ok ? "PASSED" : "FAILED");
	return ok ? 0 : 1;
}
