// The C baseline of tools/bench: the same driver operations as the Go rows,
// called through function pointers from dlopen, timed with clock_gettime.
// It prints one line per row: "<operation>\t<ns per op>".
//
//	cc -O2 -pthread -o baseline baseline.c -ldl
//	./baseline /path/to/libcuda.so.1 kernels.ptx
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef int CUdevice;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUevent;

static double cpu_ns(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static char *read_file(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc(n + 1);
	if (fread(buf, 1, n, f) != (size_t)n) {
		perror(path);
		exit(1);
	}
	buf[n] = 0;
	fclose(f);
	return buf;
}

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *must_sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "baseline: no %s\n", name);
		exit(1);
	}
	return p;
}

#define CHECK(call)                                                      \
	do {                                                                 \
		CUresult r_ = (call);                                            \
		if (r_ != 0) {                                                   \
			fprintf(stderr, "baseline: %s returned %d\n", #call, r_);  \
			exit(1);                                                     \
		}                                                                \
	} while (0)

// best_of runs a timed loop of n iterations five times and keeps the
// fastest, as testing.B's steady state does.
#define BEST_OF(label, n, body)                                  \
	do {                                                         \
		double best = 1e300;                                     \
		for (int rep = 0; rep < 5; rep++) {                      \
			double t0 = now_ns();                                \
			for (long i = 0; i < (n); i++) { body; }             \
			double per = (now_ns() - t0) / (double)(n);          \
			if (per < best) best = per;                          \
		}                                                        \
		printf("%s\t%.1f\n", label, best);                       \
	} while (0)

// The launch-stall rows: the p99 duration of a launch call while one thread
// keeps the GPU busy and another runs a loop of driver calls, as the Go
// rows "launch call p99, busy GPU" do.
static struct {
	CUcontext ctx;
	CUfunction spin;
	volatile int stop;
	volatile int on; // in turns: the loop runs
	int loop;        // which loop the other thread runs; 0: none
	int turns;       // run the loop in turns, on and off
	void *mem;
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuStreamCreate)(CUstream *, unsigned);
	CUresult (*cuStreamDestroy)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, CUstream, void **, void **);
	CUresult (*cuEventCreate)(CUevent *, unsigned);
	CUresult (*cuEventDestroy)(CUevent);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventQuery)(CUevent);
	CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
	CUresult (*cuMemHostUnregister)(void *);
	CUresult (*cuStreamGetId)(CUstream, unsigned long long *);
	CUresult (*cuStreamIsCapturing)(CUstream, int *);
} st;

static void *stall_busy(void *arg) {
	(void)arg;
	CUstream s;
	unsigned long long ns = 200000;
	void *params[] = {&ns};
	CHECK(st.cuCtxSetCurrent(st.ctx));
	CHECK(st.cuStreamCreate(&s, 1));
	while (!st.stop) {
		CHECK(st.cuLaunchKernel(st.spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
		CHECK(st.cuStreamSynchronize(s));
	}
	CHECK(st.cuStreamDestroy(s));
	return NULL;
}

static void *stall_loop(void *arg) {
	(void)arg;
	CUstream s;
	CUevent ev;
	CHECK(st.cuCtxSetCurrent(st.ctx));
	CHECK(st.cuStreamCreate(&s, 1));
	CHECK(st.cuEventCreate(&ev, 0x2));
	while (!st.stop) {
		if (st.turns && !st.on) {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
			continue;
		}
		switch (st.loop) {
		case 1: CHECK(st.cuEventRecord(ev, s)); break;
		case 2: { CUresult r = st.cuEventQuery(ev); if (r != 0 && r != 600) CHECK(r); } break;
		case 3: { CHECK(st.cuEventRecord(ev, s)); CUresult r = st.cuEventQuery(ev); if (r != 0 && r != 600) CHECK(r); } break;
		case 4: CHECK(st.cuMemHostRegister(st.mem, 64 << 10, 3)); CHECK(st.cuMemHostUnregister(st.mem)); break;
		case 5: {
			// The driver calls with which hostmem tracks one use (the
			// stream's context it knows from the stream's id).
			unsigned long long id;
			int cs;
			CHECK(st.cuStreamGetId(s, &id));
			CHECK(st.cuStreamIsCapturing(s, &cs));
			CHECK(st.cuEventRecord(ev, s));
		} break;
		}
	}
	CHECK(st.cuStreamSynchronize(s));
	CHECK(st.cuEventDestroy(ev));
	CHECK(st.cuStreamDestroy(s));
	return NULL;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

// stall_start starts the thread that keeps the GPU busy and, if loop is
// not 0, the thread that runs the loop; stall_stop ends them.
static pthread_t stall_threads[2];
static void stall_start(int loop, int turns, CUstream *s) {
	st.stop = 0;
	st.loop = loop;
	st.turns = turns;
	st.on = 0;
	CHECK(st.cuStreamCreate(s, 1));
	pthread_create(&stall_threads[0], NULL, stall_busy, NULL);
	if (loop) pthread_create(&stall_threads[1], NULL, stall_loop, NULL);
}
static void stall_stop(CUstream s) {
	st.stop = 1;
	pthread_join(stall_threads[0], NULL);
	if (st.loop) pthread_join(stall_threads[1], NULL);
	st.turns = 0;
	CHECK(st.cuStreamSynchronize(s));
	CHECK(st.cuStreamDestroy(s));
}

// stall_turns runs the loop in 20ms turns, on and off, and prints the
// median over pairs of turns of the p99 with the loop on over the p99 of
// the turn before with it off, times 1000 (the Go row's on/off-median).
static void stall_turns(const char *label, int loop) {
	enum { N = 200000, MAXT = 1024 };
	static double durs[N], turn_durs[N];
	static int turn_of[N];
	static double ratios[MAXT];
	CUstream s;
	unsigned long long ns = 0;
	void *params[] = {&ns};
	stall_start(loop, 1, &s);
	const double turn_ns = 20e6;
	double start = now_ns();
	int n = 0;
	for (int i = 0; i < N; i++) {
		double t = now_ns() - start;
		int turn = (int)(t / turn_ns);
		st.on = turn % 2;
		double t0 = now_ns();
		CHECK(st.cuLaunchKernel(st.spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
		double d = now_ns() - t0;
		if (t - turn * turn_ns >= turn_ns / 10 && turn < MAXT) { // not settling after a switch
			durs[n] = d;
			turn_of[n] = turn;
			n++;
		}
		if (i % 64 == 63) CHECK(st.cuStreamSynchronize(s));
	}
	stall_stop(s);
	// The p99 of each turn, then the ratio of each on turn to the off turn before it.
	static double p99[MAXT];
	int last = n ? turn_of[n - 1] : -1;
	for (int k = 0; k <= last; k++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (turn_of[i] == k) turn_durs[m++] = durs[i];
		p99[k] = 0;
		if (m >= 100) {
			qsort(turn_durs, m, sizeof turn_durs[0], cmp_double);
			p99[k] = turn_durs[(int)(0.99 * (m - 1))];
		}
	}
	int r = 0;
	for (int k = 1; k <= last; k += 2)
		if (p99[k] > 0 && p99[k - 1] > 0) ratios[r++] = p99[k] / p99[k - 1];
	if (r == 0) return;
	qsort(ratios, r, sizeof ratios[0], cmp_double);
	printf("%s\t%.1f\n", label, 1000 * ratios[r / 2]);
}

static void stall(const char *label, int loop) {
	enum { N = 40000 };
	static double durs[N];
	CUstream s;
	unsigned long long ns = 0;
	void *params[] = {&ns};
	stall_start(loop, 0, &s);
	for (int i = 0; i < N; i++) {
		double t0 = now_ns();
		CHECK(st.cuLaunchKernel(st.spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
		durs[i] = now_ns() - t0;
		if (i % 64 == 63) CHECK(st.cuStreamSynchronize(s));
	}
	stall_stop(s);
	qsort(durs, N, sizeof durs[0], cmp_double);
	printf("%s\t%.1f\n", label, durs[(int)(0.99 * (N - 1))]);
}

int main(int argc, char **argv) {
	const char *path = argc > 1 ? argv[1] : "libcuda.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "baseline: %s\n", dlerror());
		return 1;
	}
	CUresult (*cuInit)(unsigned) = must_sym(lib, "cuInit");
	CUresult (*cuDeviceGet)(CUdevice *, int) = must_sym(lib, "cuDeviceGet");
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = must_sym(lib, "cuDevicePrimaryCtxRetain");
	CUresult (*cuCtxSetCurrent)(CUcontext) = must_sym(lib, "cuCtxSetCurrent");
	CUresult (*cuCtxGetCurrent)(CUcontext *) = must_sym(lib, "cuCtxGetCurrent");
	CUresult (*cuStreamCreate)(CUstream *, unsigned) = must_sym(lib, "cuStreamCreate");
	CUresult (*cuStreamQuery)(CUstream) = must_sym(lib, "cuStreamQuery");
	CUresult (*cuStreamSynchronize)(CUstream) = must_sym(lib, "cuStreamSynchronize");
	CUresult (*cuModuleLoadData)(CUmodule *, const void *) = must_sym(lib, "cuModuleLoadData");
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = must_sym(lib, "cuModuleGetFunction");
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, CUstream, void **, void **) = must_sym(lib, "cuLaunchKernel");
	CUresult (*cuEventCreate)(CUevent *, unsigned) = must_sym(lib, "cuEventCreate");
	CUresult (*cuEventRecord)(CUevent, CUstream) = must_sym(lib, "cuEventRecord");
	CUresult (*cuEventSynchronize)(CUevent) = must_sym(lib, "cuEventSynchronize");
	CUresult (*cuMemHostRegister)(void *, size_t, unsigned) = must_sym(lib, "cuMemHostRegister_v2");
	CUresult (*cuMemHostUnregister)(void *) = must_sym(lib, "cuMemHostUnregister");
	CUresult (*cuMemAlloc)(unsigned long long *, size_t) = must_sym(lib, "cuMemAlloc_v2");
	CUresult (*cuMemFree)(unsigned long long) = must_sym(lib, "cuMemFree_v2");
	CUresult (*cuMemcpyHtoDAsync)(unsigned long long, const void *, size_t, CUstream) = must_sym(lib, "cuMemcpyHtoDAsync_v2");

	CUdevice dev;
	CUcontext ctx, cur;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, 1));

	BEST_OF("cuCtxGetCurrent", 2000000, CHECK(cuCtxGetCurrent(&cur)));
	BEST_OF("cuStreamQuery (idle)", 200000, CHECK(cuStreamQuery(s)));
	BEST_OF("wait, idle stream", 200000, CHECK(cuStreamSynchronize(s)));

	// Registering host memory, and copying from it.
	static const struct { const char *label; size_t n; long iters; } regs[] = {
		{"register + unregister, 4 KiB", 4 << 10, 200},
		{"register + unregister, 1 MiB", 1 << 20, 100},
		{"register + unregister, 64 MiB", 64 << 20, 10},
	};
	for (unsigned k = 0; k < sizeof regs / sizeof regs[0]; k++) {
		void *p = aligned_alloc(4096, regs[k].n);
		memset(p, 1, regs[k].n);
		BEST_OF(regs[k].label, regs[k].iters, CHECK(cuMemHostRegister(p, regs[k].n, 3)); CHECK(cuMemHostUnregister(p)));
		free(p);
	}
	{
		size_t n = 256 << 20;
		void *p = aligned_alloc(4096, n);
		memset(p, 1, n);
		unsigned long long d;
		CHECK(cuMemAlloc(&d, n));
		CHECK(cuMemHostRegister(p, n, 3));
		BEST_OF("host to device copy, 256 MiB", 10, CHECK(cuMemcpyHtoDAsync(d, p, n, s)); CHECK(cuStreamSynchronize(s)));
		CHECK(cuMemHostUnregister(p));
		CHECK(cuMemFree(d));
		free(p);
	}
	if (argc < 3) return 0;

	// The rows that launch the spin kernel of internal/kernels.
	CUmodule mod;
	CUfunction spin;
	CUevent ev;
	CHECK(cuModuleLoadData(&mod, read_file(argv[2])));
	CHECK(cuModuleGetFunction(&spin, mod, "spin"));
	CHECK(cuEventCreate(&ev, 0x1 | 0x2)); // blocking sync, no timing
	unsigned long long ns;
	void *params[] = {&ns};
#define LAUNCH() CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL))
	ns = 50000;
	BEST_OF("launch + wait, 50µs kernel", 2000, LAUNCH(); while (cuStreamQuery(s) == 600) {});
	BEST_OF("launch + wait, 50µs kernel (C cuStreamSynchronize)", 2000, LAUNCH(); CHECK(cuStreamSynchronize(s)));
	BEST_OF("launch + wait, 50µs kernel (C blocking-sync event)", 2000,
	        LAUNCH(); CHECK(cuEventRecord(ev, s)); CHECK(cuEventSynchronize(ev)));
	ns = 100000000;
	double c0 = cpu_ns();
	for (int i = 0; i < 5; i++) { LAUNCH(); CHECK(cuStreamSynchronize(s)); }
	printf("CPU in a 100ms wait\t%.1f\n", (cpu_ns() - c0) / 5);
	c0 = cpu_ns();
	for (int i = 0; i < 5; i++) { LAUNCH(); CHECK(cuEventRecord(ev, s)); CHECK(cuEventSynchronize(ev)); }
	printf("CPU in a 100ms wait (C blocking-sync event)\t%.1f\n", (cpu_ns() - c0) / 5);

	st.ctx = ctx;
	st.spin = spin;
	st.cuCtxSetCurrent = cuCtxSetCurrent;
	st.cuStreamCreate = cuStreamCreate;
	st.cuStreamDestroy = must_sym(lib, "cuStreamDestroy_v2");
	st.cuStreamSynchronize = cuStreamSynchronize;
	st.cuLaunchKernel = cuLaunchKernel;
	st.cuEventCreate = cuEventCreate;
	st.cuEventDestroy = must_sym(lib, "cuEventDestroy_v2");
	st.cuEventRecord = cuEventRecord;
	st.cuEventQuery = must_sym(lib, "cuEventQuery");
	st.cuMemHostRegister = cuMemHostRegister;
	st.cuMemHostUnregister = cuMemHostUnregister;
	st.cuStreamGetId = must_sym(lib, "cuStreamGetId");
	st.cuStreamIsCapturing = must_sym(lib, "cuStreamIsCapturing");
	st.mem = aligned_alloc(4096, 64 << 10);
	memset(st.mem, 1, 64 << 10);
	stall("launch call p99, busy GPU (C, no loop)", 0);
	stall("launch call p99, busy GPU (C, cuEventRecord loop)", 1);
	stall("launch call p99, busy GPU (C, cuEventQuery loop)", 2);
	stall("launch call p99, busy GPU (C, cuEventRecord + cuEventQuery loop)", 3);
	stall("launch call p99, busy GPU (C, register + unregister 64 KiB loop)", 4);
	stall("launch call p99, busy GPU (C, cuStreamGetId + cuStreamIsCapturing + cuEventRecord loop)", 5);
	stall_turns("launch call p99 on/off x1000, busy GPU (C, loop of hostmem's per-use calls in turns, median of pairs)", 5);
	free(st.mem);
	return 0;
}
