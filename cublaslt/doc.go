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
// MatmulEx is the whole of cuBLASLt's matmul: each operand of its own
// element type (16-bit inputs, FP8 E4M3 and E5M2 inputs and outputs with
// their scale pointers and amax in Extra), a bias of its own type, strided
// batches (Op.Batch and the strides; a stride of 0 broadcasts A or B),
// row-major matrices (Op.RowMajor), and every epilogue of cublasLt.h:
//
//   - forward: RELU, GELU, each with a bias (_BIAS) and with its input kept
//     for the backward pass (_AUX: GELU's input as the matrix Extra.Aux,
//     ReLU's sign as the bit mask Extra.Mask, with Op.AuxLD);
//   - backward: DRELU and DGELU multiply the incoming gradient by the
//     activation's derivative at the kept input, and their _BGRAD forms
//     also write the bias gradient (the sum of each row of the result) to
//     Extra.Bias; BGRADA and BGRADB write the sums of op(A)'s rows or
//     op(B)'s columns.
//
// GELU here is the tanh form, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))),
// not the erf one (x·Φ(x)): cublasLt.h does not give the formula, XLA
// fuses only its approximate GELU into this epilogue, and the tests on
// the GPU compare the epilogue with the tanh form (DGELU with its
// derivative).
//
// Lt.Algorithms lists the heuristic's answers for an Op, ranked, and
// Op.Algo selects one by its rank (Lt.Chosen says which a plan runs).
// After Close every call returns an error matching ErrClosed.
//
// The first Matmul of an Op makes its plan: the operation descriptor, the
// matrix layouts, a preference bounded by the Lt's workspace, and the
// algorithm of rank Op.Algo among the heuristic's answers; a plan is kept
// for each Op, set of element types, set of scale pointers given and
// workspace size, and later calls reuse it, so a
// Matmul of a known shape is one cublasLtMatmul call and allocates
// nothing. Calls run as package cublas's do: in the stream's context on a
// locked thread, recording the Slices' uses on the stream (cuda's
// Stream.Do).
//
// Beneath the Go-shaped layer is the whole C API of cublasLt.h, generated
// (z*.go): one function per entry point but cublasLtMatmul, which Matmul
// and MatmulEx call (its C-shaped wrapper is unexported), the
// descriptor and enum types. Calls return package cublas's Status as their
// error; the types cublasLt.h takes from cublas_api.h and library_types.h
// are package cublas's and package libtypes's.
package cublaslt
