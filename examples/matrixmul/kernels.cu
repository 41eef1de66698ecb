// Kernels of the matrixmul example. kernels.ptx is made from this file on a
// machine with the CUDA toolkit:
//
//	nvcc -ptx -arch=compute_75 -o kernels.ptx kernels.cu

#define TILE 32

// mat_mul stores a × b into c. The matrices are row-major floats: a has
// wa columns, b has wb columns and wa rows, c has wb columns and as many
// rows as a. Launch it with TILE×TILE threads a block and one block for each
// TILE×TILE tile of c; wa and wb must be multiples of TILE, and a's row count
// too. Each block walks along a's rows and down b's columns one tile at a
// time, staging both tiles in shared memory.
extern "C" __global__ void mat_mul(float *c, const float *a, const float *b, int wa, int wb) {
	__shared__ float ta[TILE][TILE];
	__shared__ float tb[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty;
	int col = blockIdx.x * TILE + tx;
	float acc = 0.0f;
	for (int k0 = 0; k0 < wa; k0 += TILE) {
		ta[ty][tx] = a[row * wa + k0 + tx];
		tb[ty][tx] = b[(k0 + ty) * wb + col];
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++) acc += ta[ty][k] * tb[k][tx];
		__syncthreads();
	}
	c[row * wb + col] = acc;
}
