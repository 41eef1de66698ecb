// Kernels of the simplestreams example. kernels.ptx is made from this file
// on a machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

// add_repeat adds *step to data[i], rounds times, for each i below n: a
// kernel that reads and writes each element a few times, so that it takes
// about as long as copying the data back.
extern "C" __global__ void add_repeat(int *data, const int *step, int rounds, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	for (int r = 0; r < rounds; r++) data[i] += *step;
}
