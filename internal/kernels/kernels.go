// Package kernels holds the PTX of the small kernels that the tests, the
// benchmarks and cudainfo's self-check launch. kernels.cu is the source;
// kernels.ptx was made from it with nvcc (see the .cu file).
package kernels

import _ "embed"

// PTX is kernels.cu compiled to PTX for compute capability 7.5 and later.
// Its entry points are spin, add_one_i32, fill_i32, sum_i64 and saxpy
// (extern "C"), and the C++ kernels scale<float>, scale<int> and the two
// overloads of ops::offset (mangled names).
//
//go:embed kernels.ptx
var PTX []byte

// TypedPTX is the kernels at the end of kernels.cu, written by hand in PTX
// (compute capability 7.5 and later): the C++ kernels axpy(float, const
// float*, float*, int) and add_vecs(Vecs), a struct of three pointers and
// an int by value, and the extern "C" add_bias(float*, int), which adds
// the __constant__ float bias; the __device__ array table holds 16 floats.
//
//go:embed typed.ptx
var TypedPTX []byte
