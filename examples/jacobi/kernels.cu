// Kernels of the jacobi example. kernels.ptx is made from this file on a
// machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

// jacobi_step does one Jacobi sweep for the n×n system a·x = b (a row-major
// floats, b and x doubles): next[i] = (b[i] - Σ_{j≠i} a[i][j]·x[j]) / a[i][i].
// It adds |next[i] - x[i]| over all rows into *diff, which the caller zeroes
// before the sweep. One warp computes one row; launch it with blocks of a
// multiple of 32 threads and enough of them to cover n rows.
extern "C" __global__ void jacobi_step(const float *a, const double *b, const double *x, double *next,
                                       double *diff, int n) {
	int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int lane = threadIdx.x % 32;
	if (row >= n) return;
	const float *r = a + (long long)row * n;
	double acc = 0;
	for (int j = lane; j < n; j += 32)
		if (j != row) acc += (double)r[j] * x[j];
	for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
	if (lane == 0) {
		double v = (b[row] - acc) / (double)r[row];
		next[row] = v;
		atomicAdd(diff, fabs(v - x[row]));
	}
}
