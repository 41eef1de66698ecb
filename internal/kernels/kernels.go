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
