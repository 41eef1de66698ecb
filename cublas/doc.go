// Package cublas binds NVIDIA's cuBLAS without cgo: the library
// (libcublas.so.13, cublas64_13.dll) is opened at run time and called
// through the same path as package libcuda.
//
// New gives a handle bound to a cuda.Stream; the typed calls take
// cuda.Slices and check their sizes, leading dimensions, strides and
// increments before anything reaches cuBLAS (ErrShape, naming the
// argument):
//
//	h, err := cublas.New(s)
//	defer h.Close()
//	err = cublas.Gemm(h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, a, m, b, k, 0, c, m)
//
// Gemm, GemmStridedBatched, Gemv, Trsm, Axpy, Scal, Dot and Nrm2 take
// float32 or float64 Slices (cuBLAS's S and D functions; the 64-bit-index
// _64 forms when a size needs them); GemmEx takes cuda.Half,
// cuda.BFloat16, int8, float32 and float64 with a compute type
// (CUBLAS_COMPUTE_32F_FAST_TF32 for TF32 tensor cores), and
// GemmBatchedEx the same on Batches of Slices (NewBatch).
//
// # Column-major
//
// cuBLAS's matrices are column-major: element (i, j) of an m x n matrix
// with leading dimension ld (at least m) is at [i + j*ld]. A Go program's
// row-major m x n matrix (element (i, j) at [i*ld + j]) is the same memory
// as a column-major n x m matrix, its transpose; so C = A*B row-major is
// C^T = B^T * A^T column-major, which GemmRowMajor runs for you.
//
// # Streams, threads and memory
//
// Every call, cublasCreate and cublasDestroy included, runs with the
// stream's context current on a locked OS thread, through cuda's
// Stream.Do: the Slices a call reads and writes are held against Free
// during the call and recorded as used by the stream, so that their Free
// waits for the work. A handle keeps its context alive until Close.
// Calls work inside Stream.Capture; SetWorkspace gives the handle a
// workspace of its own so that captured graphs do not each allocate one.
// Close hands cublasDestroy, which synchronizes the device, to
// sync.Postpone, so that it never invalidates a capture in progress.
//
// # What a call costs
//
// A typed call costs more host time than the same call from C: the
// transition from Go into C, then the checks, the holds and the use
// records above. Where that matters — many small products — pay it once
// for many: GemmStridedBatched and GemmBatchedEx multiply a whole batch in
// one call, and a sequence of calls captured into a graph
// (Stream.Capture, graph.Cached) is launched for the cost of one launch.
//
// Beneath the Go-shaped layer is the whole C API of cublas_api.h,
// generated (z*.go): one function per entry point, named as cublas_v2.h
// names them (cublasSgemm_v2 is Sgemm; the 64-bit-index cublasSgemm_v2_64
// is Sgemm64), the handle and enum types, and Status, cublasStatus_t as
// an error that errors.Is compares. Entry points are looked up by name on
// first use; one that the loaded library lacks makes its function return a
// *SymbolError. The library is found as Load says.
package cublas
