// The C reference for curand's GPU conformance test: Philox4x32-10 numbers
// made by cuRAND on the device, called from C. The test runs it in the same
// run and compares the numbers with those of package curand, bit for bit.
//
//	cc -O2 -o philox_ref philox_ref.c -ldl
//	./philox_ref LIBCUDA LIBCURAND SEED OFFSET N > out.bin
//
// It writes N raw 32-bit numbers (curandGenerate), then N normal floats of
// mean 1.5 and standard deviation 0.25 (curandGenerateNormal, float
// arguments by value), then N/2 normal doubles of mean -2 and standard
// deviation 3 (curandGenerateNormalDouble), each from a generator seeded
// with SEED at OFFSET, little-endian, to stdout. N must be even. It exits
// 1 with a message on stderr when a call fails.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef void *CUcontext;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *curandGenerator_t;

static void *lib(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	return h;
}

static void *sym(void *h, const char *name) {
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

#define CHECK(call)                                                        \
	do {                                                                   \
		int r_ = (call);                                                   \
		if (r_ != 0) {                                                     \
			fprintf(stderr, "%s failed: %d\n", #call, r_);                 \
			exit(1);                                                       \
		}                                                                  \
	} while (0)

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: %s LIBCUDA LIBCURAND SEED OFFSET N\n", argv[0]);
		return 2;
	}
	unsigned long long seed = strtoull(argv[3], 0, 0), offset = strtoull(argv[4], 0, 0);
	size_t n = strtoull(argv[5], 0, 0);
	void *cu = lib(argv[1]), *cr = lib(argv[2]);
	CUresult (*cuInit)(unsigned) = sym(cu, "cuInit");
	CUresult (*cuDeviceGet)(CUdevice *, int) = sym(cu, "cuDeviceGet");
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = sym(cu, "cuDevicePrimaryCtxRetain");
	CUresult (*cuCtxSetCurrent)(CUcontext) = sym(cu, "cuCtxSetCurrent");
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = sym(cu, "cuMemAlloc_v2");
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = sym(cu, "cuMemcpyDtoH_v2");
	CUresult (*cuCtxSynchronize)(void) = sym(cu, "cuCtxSynchronize");
	int (*create)(curandGenerator_t *, int) = sym(cr, "curandCreateGenerator");
	int (*destroy)(curandGenerator_t) = sym(cr, "curandDestroyGenerator");
	int (*setSeed)(curandGenerator_t, unsigned long long) = sym(cr, "curandSetPseudoRandomGeneratorSeed");
	int (*setOffset)(curandGenerator_t, unsigned long long) = sym(cr, "curandSetGeneratorOffset");
	int (*generate)(curandGenerator_t, unsigned *, size_t) = sym(cr, "curandGenerate");
	int (*normal)(curandGenerator_t, float *, size_t, float, float) = sym(cr, "curandGenerateNormal");
	int (*normalDouble)(curandGenerator_t, double *, size_t, double, double) = sym(cr, "curandGenerateNormalDouble");

	CUdevice dev;
	CUcontext ctx;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CUdeviceptr d;
	CHECK(cuMemAlloc(&d, n * 4));
	void *host = malloc(n * 4);
	for (int round = 0; round < 3; round++) {
		curandGenerator_t g;
		CHECK(create(&g, 161)); // CURAND_RNG_PSEUDO_PHILOX4_32_10
		CHECK(setSeed(g, seed));
		CHECK(setOffset(g, offset));
		switch (round) {
		case 0: CHECK(generate(g, (unsigned *)(uintptr_t)d, n)); break;
		case 1: CHECK(normal(g, (float *)(uintptr_t)d, n, 1.5f, 0.25f)); break;
		case 2: CHECK(normalDouble(g, (double *)(uintptr_t)d, n / 2, -2.0, 3.0)); break;
		}
		CHECK(cuCtxSynchronize());
		CHECK(cuMemcpyDtoH(host, d, n * 4));
		CHECK(destroy(g));
		if (fwrite(host, 1, n * 4, stdout) != n * 4) {
			perror("write");
			return 1;
		}
	}
	return 0;
}
