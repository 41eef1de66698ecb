// Test kernels. kernels.ptx is made from this file on a machine with the
// CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu
//
// The simulator (internal/testenv/sim) recognises each kernel by its entry
// name (the mangled name for the C++ kernels at the end) and runs a native
// version with the same arguments.

// now reads the GPU's nanosecond timer.
__device__ static unsigned long long now(void) {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__device__ static void spin_for(unsigned long long ns) {
	unsigned long long t0 = now();
	while (now() - t0 < ns) {
	}
}

// spin keeps the GPU busy for ns nanoseconds.
extern "C" __global__ void spin(unsigned long long ns) {
	if (threadIdx.x == 0 && blockIdx.x == 0) spin_for(ns);
}

// add_one_i32 adds 1 to each of the n ints at data.
extern "C" __global__ void add_one_i32(int *data, unsigned long long n) {
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		data[i] += 1;
}

// fill_i32 stores value into each of the n ints at data.
extern "C" __global__ void fill_i32(int *data, unsigned long long n, int value) {
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		data[i] = value;
}

// sum_i64 waits spin_ns nanoseconds, then stores the sum of the n values at
// in into *out. Launch it as one block of up to 1024 threads.
extern "C" __global__ void sum_i64(const long long *in, unsigned long long n, long long *out,
                                   unsigned long long spin_ns) {
	__shared__ long long part[1024];
	if (threadIdx.x == 0) spin_for(spin_ns);
	__syncthreads();
	long long s = 0;
	for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
	part[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		long long t = 0;
		for (unsigned int k = 0; k < blockDim.x; k++) t += part[k];
		*out = t;
	}
}

// saxpy computes y[i] = a*x[i] + y[i] for the n elements of x and y.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = a * x[i] + y[i];
}

// The kernels below have C++ linkage: their entry names are mangled, and
// package cuda's tests look them up by their demangled names.

// scale multiplies each of the n values at data by k.
template <typename T> __global__ void scale(T *data, T k, unsigned long long n) {
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		data[i] *= k;
}
template __global__ void scale<float>(float *, float, unsigned long long);
template __global__ void scale<int>(int *, int, unsigned long long);

namespace ops {
// offset adds k to each of the n values at data (two overloads).
__global__ void offset(float *data, float k, unsigned long long n) {
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		data[i] += k;
}
__global__ void offset(int *data, int k, unsigned long long n) {
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		data[i] += k;
}
} // namespace ops

// The kernels below are in typed.ptx, written by hand in PTX for them
// (there is no nvcc on the development machines). Each handles one
// element a thread.

// axpy: y[i] = a*x[i] + y[i]. x is const: a launch only reads it.
__global__ void axpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}

// A struct of device pointers, passed by value.
struct Vecs {
	const float *a, *b;
	float *c;
	int n;
};
__global__ void add_vecs(Vecs v) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < v.n) v.c[i] = v.a[i] + v.b[i];
}

// Module globals: a __constant__ float that add_bias adds, and a
// __device__ array no kernel uses (for Module.Global's copies).
__constant__ float bias;
__device__ float table[16];
extern "C" __global__ void add_bias(float *x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += bias;
}
