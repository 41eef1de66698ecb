// Package libtypes holds the types of CUDA's library_types.h that NVIDIA's
// math libraries share: DataType (cudaDataType: CUDA_R_32F, CUDA_R_16BF,
// ...), LibraryPropertyType and the emulation settings. Packages cublas and
// cublaslt spell their parameters with these types, so that a value made
// for one is taken by the other. Generated (z*.go) from library_types.h
// by tools/gen; it has no library file of its own.
package libtypes

//go:generate go run ../tools/gen -lib libtypes
