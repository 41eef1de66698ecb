// Package cublaslt binds NVIDIA's cuBLASLt without cgo: the library
// (libcublasLt.so.13, cublasLt64_13.dll) is opened at run time and called
// through the same path as package libcuda.
//
// New gives an Lt bound to a cuda.Stream. Matmul computes
// D = epilogue(alpha*op(A)*op(B) + beta*C + bias) as an Op describes it
// (shape, leading dimensions, compute type, epilogue: ReLU, GELU, with or
// without a bias vector), on cuda.Slices whose sizes are checked first:
//
//	lt, err := cublaslt.New(s)
//	op := cublaslt.Op{M: m, N: n, K: k, Epilogue: cublaslt.CUBLASLT_EPILOGUE_GELU_BIAS}
//	err = cublaslt.Matmul(lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, bias)
//
// The first Matmul of an Op makes its plan: the operation descriptor, the
// matrix layouts, a preference bounded by the Lt's workspace, and the
// algorithm cuBLASLt's heuristic ranks first; later ones reuse it, so a
// Matmul of a known shape is one cublasLtMatmul call and allocates
// nothing. Calls run as package cublas's do: in the stream's context on a
// locked thread, recording the Slices' uses on the stream (cuda's
// Stream.Do).
//
// Beneath the Go-shaped layer is the whole C API of cublasLt.h, generated
// (z*.go): one function per entry point (the generated cublasLtMatmul
// wrapper is the call a planned Matmul makes), the descriptor and enum
// types. Calls return package cublas's Status as their
// error; the types cublasLt.h takes from cublas_api.h and library_types.h
// are package cublas's and package libtypes's.
package cublaslt
