// Package cublas binds NVIDIA's cuBLAS without cgo: the library
// (libcublas.so.13, cublas64_13.dll) is opened at run time and called
// through the same path as package libcuda.
//
// Beneath the Go-shaped layer is the whole C API of cublas_api.h,
// generated (z*.go): one function per entry point, named as cublas_v2.h
// names them (cublasSgemm_v2 is Sgemm; the 64-bit-index cublasSgemm_v2_64
// is Sgemm64), the handle and enum types, and Status, cublasStatus_t as
// an error that errors.Is compares. Entry points are looked up by name on
// first use; one that the loaded library lacks makes its function return a
// *SymbolError. The library is found as Load says.
package cublas
