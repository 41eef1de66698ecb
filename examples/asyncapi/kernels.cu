// Kernels of the asyncapi example. kernels.ptx is made from this file on a
// machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

// add_value adds v to each of the n ints at data.
extern "C" __global__ void add_value(int *data, int v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) data[i] += v;
}
