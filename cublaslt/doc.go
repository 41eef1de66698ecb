// Package cublaslt binds NVIDIA's cuBLASLt without cgo: the library
// (libcublasLt.so.13, cublasLt64_13.dll) is opened at run time and called
// through the same path as package libcuda.
//
// Beneath the Go-shaped layer is the whole C API of cublasLt.h, generated
// (z*.go): one function per entry point (cublasLtMatmul is Matmul), the
// descriptor and enum types. Calls return package cublas's Status as their
// error; the types cublasLt.h takes from cublas_api.h and library_types.h
// are package cublas's and package libtypes's.
package cublaslt
