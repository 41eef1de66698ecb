// paired.c is loaded into the bench process with rounds.c (one shared
// library): the C half of the rows "Go and C in alternate rounds". Each
// pc_* function runs one round of n operations on the calling thread,
// whose current context is the one the handles belong to, and returns the
// first failure, or 0. Go times the round around the call; one call per
// round, so the call's own cost is spread over n operations.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUfunction;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef unsigned long long CUdeviceptr;

// CUgraphExecUpdateResultInfo: result, error node, error-from node.
typedef struct {
	int result;
	void *errorNode;
	void *errorFromNode;
} update_info;

static struct {
	CUresult (*streamSynchronize)(CUstream);
	CUresult (*streamQuery)(CUstream);
	CUresult (*eventQuery)(CUevent);
	CUresult (*eventSynchronize)(CUevent);
	CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                         CUstream, void **, void **);
	CUresult (*beginCapture)(CUstream, int);
	CUresult (*endCapture)(CUstream, CUgraph *);
	CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*execUpdate)(CUgraphExec, CUgraph, update_info *);
	CUresult (*graphLaunch)(CUgraphExec, CUstream);
	CUresult (*graphDestroy)(CUgraph);
	CUresult (*execDestroy)(CUgraphExec);
	CUresult (*memsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*launchHostFunc)(CUstream, void (*)(void *), void *);
} cu;

// pc_paired_init finds the driver's functions in the library at path; it
// returns 0, or -1 when one is missing.
int pc_paired_init(const char *path) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) return -1;
	int ok = 1;
#define SYM(field, name) ok &= (*(void **)&cu.field = dlsym(lib, name)) != NULL
	SYM(streamSynchronize, "cuStreamSynchronize");
	SYM(streamQuery, "cuStreamQuery");
	SYM(eventQuery, "cuEventQuery");
	SYM(eventSynchronize, "cuEventSynchronize");
	SYM(launchKernel, "cuLaunchKernel");
	SYM(beginCapture, "cuStreamBeginCapture_v2");
	SYM(endCapture, "cuStreamEndCapture");
	SYM(instantiate, "cuGraphInstantiateWithFlags");
	SYM(execUpdate, "cuGraphExecUpdate_v2");
	SYM(graphLaunch, "cuGraphLaunch");
	SYM(graphDestroy, "cuGraphDestroy");
	SYM(execDestroy, "cuGraphExecDestroy");
	SYM(memsetD8Async, "cuMemsetD8Async");
	SYM(memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	SYM(launchHostFunc, "cuLaunchHostFunc");
#undef SYM
	return ok ? 0 : -1;
}

#define TRY(call)                      \
	do {                               \
		CUresult r_ = (call);          \
		if (r_ != 0) return r_;        \
	} while (0)

// pc_stream_sync synchronizes stream s n times.
int pc_stream_sync(CUstream s, long n) {
	for (long i = 0; i < n; i++) TRY(cu.streamSynchronize(s));
	return 0;
}

// pc_stream_query queries stream s n times.
int pc_stream_query(CUstream s, long n) {
	for (long i = 0; i < n; i++) TRY(cu.streamQuery(s));
	return 0;
}

// pc_event_query queries event e n times.
int pc_event_query(CUevent e, long n) {
	for (long i = 0; i < n; i++) TRY(cu.eventQuery(e));
	return 0;
}

// pc_event_sync synchronizes event e n times.
int pc_event_sync(CUevent e, long n) {
	for (long i = 0; i < n; i++) TRY(cu.eventSynchronize(e));
	return 0;
}

// pc_launch4 launches f (four 8-byte parameters: a, b, c, d) n times on s
// with one block of one thread, then synchronizes s.
int pc_launch4(CUfunction f, CUstream s, uint64_t a, uint64_t b, uint64_t c, uint64_t d, long n) {
	void *params[] = {&a, &b, &c, &d};
	for (long i = 0; i < n; i++) TRY(cu.launchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
	return cu.streamSynchronize(s);
}

// The call-path rows (callpath.go) split what a Go call of the driver
// costs: pc_launch1 and pc_query1 make one call each, for Go to call once
// an operation; pc_empty does nothing (the bare Go-to-C transition);
// pc_launch4_gap is pc_launch4 with a busy wait of gap ns after each
// launch (does a pause between calls alone make the next call dearer?).
int pc_launch1(CUfunction f, CUstream s, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
	void *params[] = {&a, &b, &c, &d};
	return cu.launchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

int pc_query1(CUstream s) { return cu.streamQuery(s); }

int pc_empty(void) { return 0; }

// pc_empty_loop calls pc_empty n times through a volatile pointer, so
// that the compiler keeps the calls.
int pc_empty_loop(long n) {
	int (*volatile fn)(void) = pc_empty;
	for (long i = 0; i < n; i++) TRY(fn());
	return 0;
}

static long long pc_now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// pc_spin busy-waits about ns nanoseconds.
void pc_spin(long ns) {
	long long end = pc_now() + ns;
	while (pc_now() < end) {
	}
}

// pc_query_locked queries s n times with a locked add before and after
// each query, as runtime.cgocall's status changes make around a call:
// do two full barriers a call alone explain the Go-to-C overhead?
int pc_query_locked(CUstream s, long n) {
	static long word;
	for (long i = 0; i < n; i++) {
		__atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST);
		CUresult r = cu.streamQuery(s);
		__atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST);
		if (r) return r;
	}
	return 0;
}

int pc_launch4_gap(CUfunction f, CUstream s, uint64_t a, uint64_t b, uint64_t c, uint64_t d, long n, long gap) {
	void *params[] = {&a, &b, &c, &d};
	for (long i = 0; i < n; i++) {
		TRY(cu.launchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
		pc_spin(gap);
	}
	return cu.streamSynchronize(s);
}

// capture_update captures what issue(arg, s) launches on s (thread-local
// mode), brings *x up to date with it (instantiating on the first call,
// updating in place after; an update refused is an error here: the rows
// capture the same topology each time) and destroys the captured graph.
static CUresult capture_update(CUstream s, CUgraphExec *x, CUresult (*issue)(void *, CUstream), void *arg) {
	CUgraph g = NULL;
	TRY(cu.beginCapture(s, 1)); // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	CUresult r = issue(arg, s);
	CUresult e = cu.endCapture(s, &g);
	if (!r) r = e;
	if (!r) {
		if (*x) {
			update_info info;
			r = cu.execUpdate(*x, g, &info);
		} else {
			r = cu.instantiate(x, g, 0);
		}
	}
	if (g) {
		CUresult d = cu.graphDestroy(g);
		if (!r) r = d;
	}
	return r;
}

struct kernels {
	CUfunction f;
	CUdeviceptr buf;
	unsigned long long ints;
	long k;
};

static CUresult issue_kernels(void *arg, CUstream s) {
	struct kernels *ks = arg;
	void *params[] = {&ks->buf, &ks->ints};
	for (long i = 0; i < ks->k; i++)
		TRY(cu.launchKernel(ks->f, 1, 1, 1, (unsigned)ks->ints, 1, 1, 0, s, params, NULL));
	return 0;
}

// pc_cached_kernels runs n rounds of: capture k launches of add_one_i32
// (buf, ints) on s, update the executable graph, launch it and synchronize
// s, as graph.Cached.Run and a wait do. The executable graph is made in
// the first round and destroyed after the last.
int pc_cached_kernels(CUfunction f, CUstream s, CUdeviceptr buf, unsigned long long ints, long k, long n) {
	struct kernels ks = {f, buf, ints, k};
	CUgraphExec x = NULL;
	CUresult r = 0;
	for (long i = 0; i < n && !r; i++) {
		r = capture_update(s, &x, issue_kernels, &ks);
		if (!r) r = cu.graphLaunch(x, s);
		if (!r) r = cu.streamSynchronize(s);
	}
	if (x) {
		CUresult d = cu.execDestroy(x);
		if (!r) r = d;
	}
	return r;
}

struct jacobi {
	CUfunction f;
	CUdeviceptr A, b, x, xnew, sum;
	unsigned long long n;
	double *host; // the residual's pinned host word
	int k;        // the iteration: even reads x, odd reads xnew
};

static CUresult issue_jacobi(void *arg, CUstream s) {
	struct jacobi *j = arg;
	CUdeviceptr *in = j->k % 2 ? &j->xnew : &j->x, *out = j->k % 2 ? &j->x : &j->xnew;
	void *params[] = {&j->A, &j->b, in, out, &j->sum, &j->n};
	TRY(cu.memsetD8Async(j->sum, 0, sizeof(double), s));
	TRY(cu.launchKernel(j->f, (unsigned)j->n, 1, 1, 32, 1, 1, 0, s, params, NULL));
	return cu.memcpyDtoHAsync(j->host, j->sum, sizeof(double), s);
}

// pc_jacobi solves A x = b by Jacobi sweeps of jacobi_f64 (A: n*n floats,
// b, x, xnew: n doubles, x and xnew zero, sum: one double) until the sum
// of |dx| of a sweep is below tol or max sweeps have run: each sweep is
// captured (reset the sum, the kernel, the sum copied to host, which is
// pinned memory), the executable graph updated and launched, the stream
// synchronized and host read. It stores the sweeps made in *iters.
int pc_jacobi(CUfunction f, CUstream s, CUdeviceptr A, CUdeviceptr b, CUdeviceptr x, CUdeviceptr xnew,
              CUdeviceptr sum, unsigned long long n, double *host, double tol, int max, int *iters) {
	struct jacobi j = {f, A, b, x, xnew, sum, n, host, 0};
	CUgraphExec exec = NULL;
	CUresult r = 0;
	*iters = 0;
	for (j.k = 0; j.k < max && !r; j.k++) {
		r = capture_update(s, &exec, issue_jacobi, &j);
		if (!r) r = cu.graphLaunch(exec, s);
		if (!r) r = cu.streamSynchronize(s);
		if (!r) {
			*iters = j.k + 1;
			if (*(volatile double *)host < tol) break;
		}
	}
	if (exec) {
		CUresult d = cu.execDestroy(exec);
		if (!r) r = d;
	}
	return r;
}

static void count_call(void *arg) { ++*(volatile long *)arg; }

// pc_host_funcs submits n host functions to s, each counting its call,
// then synchronizes s: the stream runs them one after another, each on the
// driver's callback thread, as cuda.Stream.HostFunc's do through their
// trampoline. It fails with 999 when a host function did not run.
int pc_host_funcs(CUstream s, long n) {
	static long calls;
	long before = calls;
	for (long i = 0; i < n; i++) TRY(cu.launchHostFunc(s, count_call, &calls));
	TRY(cu.streamSynchronize(s));
	return calls - before == n ? 0 : 999;
}
