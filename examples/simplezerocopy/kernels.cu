// Kernels of the simplezerocopy example. kernels.ptx is made from this file
// on a machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

// mapped_add stores a[i] + b[i] into c[i] for each i below n. The example
// passes host memory mapped into the device's address space, so every load
// and store crosses the bus.
extern "C" __global__ void mapped_add(const float *a, const float *b, float *c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) c[i] = a[i] + b[i];
}
