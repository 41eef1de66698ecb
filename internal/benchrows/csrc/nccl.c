// nccl.c is the C half of the NCCL rows (nccl.go): pn_allreduce runs one
// round of n out-of-place float32 sum all-reduces on the communicator,
// stream and buffers the Go half uses, then waits for the stream, and
// returns the first failure or 0. The libraries are opened by the paths
// the Go process loaded, so both halves call the same copies.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUstream;
typedef void *ncclComm_t;

static CUresult (*streamSynchronize)(CUstream);
static int (*allReduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);

// pn_init opens the driver and NCCL at the given paths; 0 when every
// function was found.
int pn_init(const char *cuda, const char *nccl) {
	void *d = dlopen(cuda, RTLD_NOW | RTLD_LOCAL), *n = dlopen(nccl, RTLD_NOW | RTLD_LOCAL);
	if (!d || !n) return 1;
	streamSynchronize = (CUresult(*)(CUstream))dlsym(d, "cuStreamSynchronize");
	allReduce = (int (*)(const void *, void *, size_t, int, int, ncclComm_t, CUstream))dlsym(n, "ncclAllReduce");
	return !streamSynchronize || !allReduce;
}

static long long now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// pn_allreduce: n times recv = sum over the ranks of send (count floats,
// ncclFloat32 = 7, ncclSum = 0), then a wait; *enqueue gets the
// nanoseconds the n calls took before the wait.
int pn_allreduce(ncclComm_t comm, CUstream s, uintptr_t send, uintptr_t recv, size_t count, int n, long long *enqueue) {
	long long t0 = now_ns();
	for (int i = 0; i < n; i++) {
		int st = allReduce((const void *)send, (void *)recv, count, 7, 0, comm, s);
		if (st) return 1000 + st;
	}
	*enqueue = now_ns() - t0;
	return streamSynchronize(s);
}
