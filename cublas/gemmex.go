package cublas

import (
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/libtypes"
)

// Elem is an element type GemmEx takes, with its cudaDataType:
// float32 (CUDA_R_32F), float64 (CUDA_R_64F), libtypes.Half (CUDA_R_16F),
// libtypes.BFloat16 (CUDA_R_16BF), int8 (CUDA_R_8I) and int32 (CUDA_R_32I).
type Elem interface {
	float32 | float64 | libtypes.Half | libtypes.BFloat16 | int8 | int32
}

// DataTypeOf is the cudaDataType of T.
func DataTypeOf[T Elem]() libtypes.DataType {
	switch any(*new(T)).(type) {
	case float32:
		return libtypes.CUDA_R_32F
	case float64:
		return libtypes.CUDA_R_64F
	case libtypes.Half:
		return libtypes.CUDA_R_16F
	case libtypes.BFloat16:
		return libtypes.CUDA_R_16BF
	case int8:
		return libtypes.CUDA_R_8I
	}
	return libtypes.CUDA_R_32I
}

// Scalar holds alpha or beta in the type a compute type scales by (its
// ScaleType), for calls that take them by pointer: pass &s.
type Scalar [8]byte

// ScaleType is the type a compute type's alpha and beta have: CUDA_R_32F
// for the 32F compute types (TF32 and the fast 16-bit ones included),
// CUDA_R_64F for 64F, CUDA_R_16F for 16F, CUDA_R_32I for 32I; ok is false
// for a value that is no compute type.
func ScaleType(compute ComputeType) (t libtypes.DataType, ok bool) {
	switch compute {
	case CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_COMPUTE_32F_FAST_16BF,
		CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
		return libtypes.CUDA_R_32F, true
	case CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F_PEDANTIC, CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
		return libtypes.CUDA_R_64F, true
	case CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC:
		return libtypes.CUDA_R_16F, true
	case CUBLAS_COMPUTE_32I, CUBLAS_COMPUTE_32I_PEDANTIC:
		return libtypes.CUDA_R_32I, true
	}
	return 0, false
}

// ScalarOf is v in compute's scale type (see ScaleType); an unknown
// compute type is a *ShapeError (matching ErrShape) naming compute.
func ScalarOf(compute ComputeType, v float64) (Scalar, error) {
	var s Scalar
	t, ok := ScaleType(compute)
	switch {
	case !ok:
		return s, &ShapeError{Pkg: "cublas", Call: "ScalarOf", Arg: "compute", Value: int64(compute), Reason: fmt.Sprintf("compute type %v is unknown", compute)}
	case t == libtypes.CUDA_R_32F:
		*(*float32)(unsafe.Pointer(&s)) = float32(v)
	case t == libtypes.CUDA_R_64F:
		*(*float64)(unsafe.Pointer(&s)) = v
	case t == libtypes.CUDA_R_16F:
		*(*libtypes.Half)(unsafe.Pointer(&s)) = libtypes.HalfOf(float32(v))
	default:
		*(*int32)(unsafe.Pointer(&s)) = int32(v)
	}
	return s, nil
}

// GemmEx is Gemm with the element types of A, B and C taken from their
// Slices and the arithmetic given by compute (cublasGemmEx, or
// cublasGemmEx_64): CUBLAS_COMPUTE_32F_FAST_TF32 multiplies float32
// matrices on TF32 tensor cores; libtypes.Half or libtypes.BFloat16 inputs with
// CUBLAS_COMPUTE_32F accumulate in float32. alpha and beta are converted
// to the compute type's scalar (float32 for the 32F types). Which
// combinations cuBLAS supports is its own table; others fail with
// CUBLAS_STATUS_NOT_SUPPORTED.
func GemmEx[TA, TB, TC Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha float64, a cuda.Slice[TA], lda int,
	b cuda.Slice[TB], ldb int, beta float64, c cuda.Slice[TC], ldc int, compute ComputeType) error {
	const call = "GemmEx"
	if err := checkGemm(call, transA, transB, m, n, k, size(a), lda, size(b), ldb, size(c), ldc); err != nil {
		return err
	}
	al, err := ScalarOf(compute, alpha)
	if err != nil {
		err.(*ShapeError).Call = call
		return err
	}
	be, _ := ScalarOf(compute, beta)
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(m, n, k, lda, ldb, ldc)
	sym := "cublasGemmEx"
	if !small {
		sym = "cublasGemmEx_64"
	}
	at, bt, ct := DataTypeOf[TA](), DataTypeOf[TB](), DataTypeOf[TC]()
	ops := [4]cuda.Operand{a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite)}
	nops := 3 + st.workspaceOperand((*[1]cuda.Operand)(ops[3:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		pa := unsafe.Pointer(devPtr[byte](ops[0].Ptr()))
		pb := unsafe.Pointer(devPtr[byte](ops[1].Ptr()))
		pc := unsafe.Pointer(devPtr[byte](ops[2].Ptr()))
		var err error
		if small {
			err = gemmEx(st.raw, transA, transB, int32(m), int32(n), int32(k), unsafe.Pointer(&al), pa, at, int32(lda),
				pb, bt, int32(ldb), unsafe.Pointer(&be), pc, ct, int32(ldc), compute, CUBLAS_GEMM_DEFAULT)
		} else {
			err = gemmEx64(st.raw, transA, transB, int64(m), int64(n), int64(k), unsafe.Pointer(&al), pa, at, int64(lda),
				pb, bt, int64(ldb), unsafe.Pointer(&be), pc, ct, int64(ldc), compute, CUBLAS_GEMM_DEFAULT)
		}
		return callErr(sym, err)
	})
}
