package cublas

import (
	"errors"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// Float is the element type of the typed calls: float32 (cuBLAS's S
// functions) or float64 (D).
type Float interface{ float32 | float64 }

// isSingle reports whether T is float32.
func isSingle[T Float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

// symbol picks the C symbol of a typed call: single or double, 32-bit or
// 64-bit indices.
func symbol[T Float](s32, s64, d32, d64 string, small bool) string {
	switch {
	case isSingle[T]() && small:
		return s32
	case isSingle[T]():
		return s64
	case small:
		return d32
	}
	return d64
}

// callErr names the C symbol of a failed call (dl.Failed); a *SymbolError
// or a *LoadError names it already and comes back as it is.
func callErr(sym string, err error) error {
	if err == nil {
		return nil
	}
	var se *SymbolError
	var le *LoadError
	if errors.As(err, &se) || errors.As(err, &le) {
		return err
	}
	return dl.Failed("cublas", sym, err)
}

// Gemm computes C = alpha*op(A)*op(B) + beta*C (cublasSgemm_v2 or
// cublasDgemm_v2; their _64 forms when a size does not fit a C int), on
// column-major matrices: op(A) is m x k, op(B) is k x n, C is m x n, and
// element (i, j) of a matrix X with leading dimension ldX is X[i + j*ldX].
// op is NoTrans, Trans or ConjTrans. Sizes, leading dimensions and the
// Slices' lengths are checked first (ErrShape, naming the argument).
//
// Go code usually holds row-major matrices: see GemmRowMajor, or pass
// them to Gemm as their transposes (a row-major m x n matrix is a
// column-major n x m one with the same leading dimension).
//
// The work is submitted to the handle's stream; A and B are recorded as
// read by it and C as written. With the handle's default pointer mode,
// alpha and beta are read during the call.
func Gemm[T Float](h *BLAS, transA, transB Operation, m, n, k int, alpha T, a cuda.Slice[T], lda int,
	b cuda.Slice[T], ldb int, beta T, c cuda.Slice[T], ldc int) error {
	const call = "Gemm"
	if err := checkGemm(call, transA, transB, m, n, k, a.Len(), lda, b.Len(), ldb, c.Len(), ldc); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(m, n, k, lda, ldb, ldc)
	sym := symbol[T]("cublasSgemm_v2", "cublasSgemm_v2_64", "cublasDgemm_v2", "cublasDgemm_v2_64", small)
	ops := [4]cuda.Operand{a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite)}
	nops := 3 + st.workspaceOperand((*[1]cuda.Operand)(ops[3:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		pa, pb, pc := ops[0].Ptr(), ops[1].Ptr(), ops[2].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Sgemm(st.raw, transA, transB, int32(m), int32(n), int32(k), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int32(lda), devPtr[float32](pb), int32(ldb), (*float32)(unsafe.Pointer(&beta)), devPtr[float32](pc), int32(ldc))
		case isSingle[T]():
			err = Sgemm64(st.raw, transA, transB, int64(m), int64(n), int64(k), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int64(lda), devPtr[float32](pb), int64(ldb), (*float32)(unsafe.Pointer(&beta)), devPtr[float32](pc), int64(ldc))
		case small:
			err = Dgemm(st.raw, transA, transB, int32(m), int32(n), int32(k), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int32(lda), devPtr[float64](pb), int32(ldb), (*float64)(unsafe.Pointer(&beta)), devPtr[float64](pc), int32(ldc))
		default:
			err = Dgemm64(st.raw, transA, transB, int64(m), int64(n), int64(k), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int64(lda), devPtr[float64](pb), int64(ldb), (*float64)(unsafe.Pointer(&beta)), devPtr[float64](pc), int64(ldc))
		}
		return callErr(sym, err)
	})
}

// checkOps checks a multiplication's operations and sizes.
func checkOps(call string, transA, transB Operation, m, n, k int) error {
	if err := checkOp(call, "transA", transA); err != nil {
		return err
	}
	if err := checkOp(call, "transB", transB); err != nil {
		return err
	}
	return dims(call, "mnk", m, n, k)
}

// checkGemm checks Gemm's sizes against the Slices' lengths: a few
// comparisons when they fit, checkGemmErr's error when not.
func checkGemm(call string, transA, transB Operation, m, n, k, la, lda, lb, ldb, lc, ldc int) error {
	ra, ca := stored(transA, m, k)
	rb, cb := stored(transB, k, n)
	if opOK(transA) && opOK(transB) && m|n|k >= 0 && matrixOK(ra, ca, lda, la) && matrixOK(rb, cb, ldb, lb) && matrixOK(m, n, ldc, lc) {
		return nil
	}
	return checkGemmErr(call, transA, transB, m, n, k, la, lda, lb, ldb, lc, ldc)
}

// checkGemmErr is checkGemm's error, naming the first argument that is
// wrong.
//
//go:noinline
func checkGemmErr(call string, transA, transB Operation, m, n, k, la, lda, lb, ldb, lc, ldc int) error {
	if err := checkOps(call, transA, transB, m, n, k); err != nil {
		return err
	}
	ra, ca := stored(transA, m, k)
	if err := matrix(call, "A", ra, ca, lda, la); err != nil {
		return err
	}
	rb, cb := stored(transB, k, n)
	if err := matrix(call, "B", rb, cb, ldb, lb); err != nil {
		return err
	}
	return matrix(call, "C", m, n, ldc, lc)
}

// GemmRowMajor is Gemm on row-major matrices: C = alpha*op(A)*op(B) +
// beta*C with op(A) m x k, op(B) k x n and C m x n, element (i, j) of X
// at X[i*ldX + j] (ldX at least its number of columns). It runs Gemm on
// the transposes, C^T = op(B)^T * op(A)^T, which are the same memory read
// column-major: no copy.
func GemmRowMajor[T Float](h *BLAS, transA, transB Operation, m, n, k int, alpha T, a cuda.Slice[T], lda int,
	b cuda.Slice[T], ldb int, beta T, c cuda.Slice[T], ldc int) error {
	const call = "GemmRowMajor"
	if err := checkOps(call, transA, transB, m, n, k); err != nil {
		return err
	}
	// Row-major r x c is column-major c x r.
	ra, ca := stored(transA, m, k)
	if err := matrix(call, "A", ca, ra, lda, a.Len()); err != nil {
		return err
	}
	rb, cb := stored(transB, k, n)
	if err := matrix(call, "B", cb, rb, ldb, b.Len()); err != nil {
		return err
	}
	if err := matrix(call, "C", n, m, ldc, c.Len()); err != nil {
		return err
	}
	return Gemm(h, transB, transA, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
}

// GemmStridedBatched computes batch products C[i] = alpha*op(A[i])*op(B[i])
// + beta*C[i] (cublasSgemmStridedBatched / cublasDgemmStridedBatched, or
// their _64 forms), the matrices of each batch strideA, strideB and
// strideC elements apart in one Slice, as Gemm lays them out. The output
// matrices must not overlap.
func GemmStridedBatched[T Float](h *BLAS, transA, transB Operation, m, n, k int, alpha T, a cuda.Slice[T], lda, strideA int,
	b cuda.Slice[T], ldb, strideB int, beta T, c cuda.Slice[T], ldc, strideC, batch int) error {
	const call = "GemmStridedBatched"
	if err := checkOps(call, transA, transB, m, n, k); err != nil {
		return err
	}
	if batch < 0 {
		return shapeErr(call, "batch is %d", batch)
	}
	ra, ca := stored(transA, m, k)
	if err := batched(call, "A", ra, ca, lda, int64(strideA), batch, a.Len()); err != nil {
		return err
	}
	rb, cb := stored(transB, k, n)
	if err := batched(call, "B", rb, cb, ldb, int64(strideB), batch, b.Len()); err != nil {
		return err
	}
	if err := batched(call, "C", m, n, ldc, int64(strideC), batch, c.Len()); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(m, n, k, lda, ldb, ldc, batch)
	sym := symbol[T]("cublasSgemmStridedBatched", "cublasSgemmStridedBatched_64", "cublasDgemmStridedBatched", "cublasDgemmStridedBatched_64", small)
	ops := [4]cuda.Operand{a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite)}
	nops := 3 + st.workspaceOperand((*[1]cuda.Operand)(ops[3:]))
	sa, sb, sc := int64(strideA), int64(strideB), int64(strideC)
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		pa, pb, pc := ops[0].Ptr(), ops[1].Ptr(), ops[2].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = SgemmStridedBatched(st.raw, transA, transB, int32(m), int32(n), int32(k), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int32(lda), sa, devPtr[float32](pb), int32(ldb), sb, (*float32)(unsafe.Pointer(&beta)),
				devPtr[float32](pc), int32(ldc), sc, int32(batch))
		case isSingle[T]():
			err = SgemmStridedBatched64(st.raw, transA, transB, int64(m), int64(n), int64(k), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int64(lda), sa, devPtr[float32](pb), int64(ldb), sb, (*float32)(unsafe.Pointer(&beta)),
				devPtr[float32](pc), int64(ldc), sc, int64(batch))
		case small:
			err = DgemmStridedBatched(st.raw, transA, transB, int32(m), int32(n), int32(k), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int32(lda), sa, devPtr[float64](pb), int32(ldb), sb, (*float64)(unsafe.Pointer(&beta)),
				devPtr[float64](pc), int32(ldc), sc, int32(batch))
		default:
			err = DgemmStridedBatched64(st.raw, transA, transB, int64(m), int64(n), int64(k), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int64(lda), sa, devPtr[float64](pb), int64(ldb), sb, (*float64)(unsafe.Pointer(&beta)),
				devPtr[float64](pc), int64(ldc), sc, int64(batch))
		}
		return callErr(sym, err)
	})
}

// Trsm solves op(A)*X = alpha*B (side CUBLAS_SIDE_LEFT) or X*op(A) =
// alpha*B (CUBLAS_SIDE_RIGHT) for X, which overwrites B (cublasStrsm_v2 /
// cublasDtrsm_v2, or their _64 forms). A is triangular (uplo says which
// half is used, diag whether its diagonal is taken as ones), m x m on the
// left or n x n on the right; B is m x n.
func Trsm[T Float](h *BLAS, side SideMode, uplo FillMode, trans Operation, diag DiagType, m, n int, alpha T,
	a cuda.Slice[T], lda int, b cuda.Slice[T], ldb int) error {
	const call = "Trsm"
	if side != CUBLAS_SIDE_LEFT && side != CUBLAS_SIDE_RIGHT {
		return shapeErr(call, "side is %v", side)
	}
	if uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER {
		return shapeErr(call, "uplo is %v", uplo)
	}
	if diag != CUBLAS_DIAG_NON_UNIT && diag != CUBLAS_DIAG_UNIT {
		return shapeErr(call, "diag is %v", diag)
	}
	if err := checkOp(call, "trans", trans); err != nil {
		return err
	}
	if err := dims(call, "mn", m, n); err != nil {
		return err
	}
	ka := m
	if side == CUBLAS_SIDE_RIGHT {
		ka = n
	}
	if err := matrix(call, "A", ka, ka, lda, a.Len()); err != nil {
		return err
	}
	if err := matrix(call, "B", m, n, ldb, b.Len()); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(m, n, lda, ldb)
	sym := symbol[T]("cublasStrsm_v2", "cublasStrsm_v2_64", "cublasDtrsm_v2", "cublasDtrsm_v2_64", small)
	ops := [3]cuda.Operand{a.Operand(cuda.Read), b.Operand(cuda.ReadWrite)}
	nops := 2 + st.workspaceOperand((*[1]cuda.Operand)(ops[2:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		pa, pb := ops[0].Ptr(), ops[1].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Strsm(st.raw, side, uplo, trans, diag, int32(m), int32(n), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int32(lda), devPtr[float32](pb), int32(ldb))
		case isSingle[T]():
			err = Strsm64(st.raw, side, uplo, trans, diag, int64(m), int64(n), (*float32)(unsafe.Pointer(&alpha)),
				devPtr[float32](pa), int64(lda), devPtr[float32](pb), int64(ldb))
		case small:
			err = Dtrsm(st.raw, side, uplo, trans, diag, int32(m), int32(n), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int32(lda), devPtr[float64](pb), int32(ldb))
		default:
			err = Dtrsm64(st.raw, side, uplo, trans, diag, int64(m), int64(n), (*float64)(unsafe.Pointer(&alpha)),
				devPtr[float64](pa), int64(lda), devPtr[float64](pb), int64(ldb))
		}
		return callErr(sym, err)
	})
}
