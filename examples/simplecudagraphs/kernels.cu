// Kernels of the simplecudagraphs example. kernels.ptx is made from this
// file on a machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

#define THREADS 512

// block_sum adds up the block's THREADS values in s, leaving the total in
// s[0]. Every thread of the block calls it.
__device__ static void block_sum(double *s) {
	for (int half = THREADS / 2; half > 0; half /= 2) {
		__syncthreads();
		if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
	}
	__syncthreads();
}

// partial_sums adds the n floats at in, each block over its share (the
// blocks stride over the input together), and stores block b's total, as a
// double, into out[b]. Launch it with THREADS threads a block.
extern "C" __global__ void partial_sums(const float *in, unsigned long long n, double *out) {
	__shared__ double s[THREADS];
	double acc = 0;
	for (unsigned long long i = blockIdx.x * (unsigned long long)THREADS + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * THREADS)
		acc += in[i];
	s[threadIdx.x] = acc;
	block_sum(s);
	if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// total_sum adds the n doubles at in into *out. Launch it as one block of
// THREADS threads.
extern "C" __global__ void total_sum(const double *in, unsigned long long n, double *out) {
	__shared__ double s[THREADS];
	double acc = 0;
	for (unsigned long long i = threadIdx.x; i < n; i += THREADS) acc += in[i];
	s[threadIdx.x] = acc;
	block_sum(s);
	if (threadIdx.x == 0) *out = s[0];
}
