package cublas

import (
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/libtypes"
)

// exCall is one call of the GemmEx family after its checks: the sizes,
// the element types, and whether the matrices are a strided batch.
type exCall struct {
	call           string
	transA, transB Operation
	m, n, k        int
	lda, ldb, ldc  int
	sa, sb, sc     int64
	batch          int
	at, bt, ct     libtypes.DataType
	compute        ComputeType
	strided        bool
}

// check checks the matrices of x against the Slices' lengths (size's:
// -1 is the zero Slice).
func (x *exCall) check(la, lb, lc int) error {
	if err := checkOps(x.call, x.transA, x.transB, x.m, x.n, x.k); err != nil {
		return err
	}
	if x.batch < 0 {
		return shapeErr(x.call, "batch", int64(x.batch), "batch is %d", x.batch)
	}
	ra, ca := stored(x.transA, x.m, x.k)
	if err := batched(x.call, "A", false, ra, ca, x.lda, x.sa, x.batch, la); err != nil {
		return err
	}
	rb, cb := stored(x.transB, x.k, x.n)
	if err := batched(x.call, "B", false, rb, cb, x.ldb, x.sb, x.batch, lb); err != nil {
		return err
	}
	return batched(x.call, "C", true, x.m, x.n, x.ldc, x.sc, x.batch, lc)
}

// symbol is the C entry point x calls.
func (x *exCall) symbol(small bool) string {
	switch {
	case x.strided && small:
		return "cublasGemmStridedBatchedEx"
	case x.strided:
		return "cublasGemmStridedBatchedEx_64"
	case small:
		return "cublasGemmEx"
	}
	return "cublasGemmEx_64"
}

// raw makes the C call with the operands' addresses and the scalars'.
func (x *exCall) raw(h Handle, small bool, pa, pb, pc, alpha, beta unsafe.Pointer) error {
	switch {
	case x.strided && small:
		return gemmStridedBatchedEx(h, x.transA, x.transB, int32(x.m), int32(x.n), int32(x.k), alpha, pa, x.at, int32(x.lda), x.sa,
			pb, x.bt, int32(x.ldb), x.sb, beta, pc, x.ct, int32(x.ldc), x.sc, int32(x.batch), x.compute, CUBLAS_GEMM_DEFAULT)
	case x.strided:
		return gemmStridedBatchedEx64(h, x.transA, x.transB, int64(x.m), int64(x.n), int64(x.k), alpha, pa, x.at, int64(x.lda), x.sa,
			pb, x.bt, int64(x.ldb), x.sb, beta, pc, x.ct, int64(x.ldc), x.sc, int64(x.batch), x.compute, CUBLAS_GEMM_DEFAULT)
	case small:
		return gemmEx(h, x.transA, x.transB, int32(x.m), int32(x.n), int32(x.k), alpha, pa, x.at, int32(x.lda),
			pb, x.bt, int32(x.ldb), beta, pc, x.ct, int32(x.ldc), x.compute, CUBLAS_GEMM_DEFAULT)
	}
	return gemmEx64(h, x.transA, x.transB, int64(x.m), int64(x.n), int64(x.k), alpha, pa, x.at, int64(x.lda),
		pb, x.bt, int64(x.ldb), beta, pc, x.ct, int64(x.ldc), x.compute, CUBLAS_GEMM_DEFAULT)
}

// runHost submits x with alpha and beta on the host, in the handle's
// default pointer mode.
func (x *exCall) runHost(h *BLAS, alpha, beta float64, a, b, c cuda.Operand) error {
	al, err := ScalarOf(x.compute, alpha)
	if err != nil {
		err.(*ShapeError).Call = x.call
		return err
	}
	be, _ := ScalarOf(x.compute, beta)
	st, err := h.acquire(x.call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(x.m, x.n, x.k, x.lda, x.ldb, x.ldc, x.batch)
	sym := x.symbol(small)
	ops := [4]cuda.Operand{a, b, c}
	nops := 3 + st.workspaceOperand((*[1]cuda.Operand)(ops[3:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		err := x.raw(st.raw, small, unsafe.Pointer(devPtr[byte](ops[0].Ptr())), unsafe.Pointer(devPtr[byte](ops[1].Ptr())),
			unsafe.Pointer(devPtr[byte](ops[2].Ptr())), unsafe.Pointer(&al), unsafe.Pointer(&be))
		return callErr(sym, err)
	})
}

// runDevice submits x with alpha and beta read from device memory when
// the work runs: the handle is put in CUBLAS_POINTER_MODE_DEVICE for the
// call and back in host mode after it, holding the handle alone (other
// calls on it wait), since the pointer mode is the handle's.
func (x *exCall) runDevice(h *BLAS, scale libtypes.DataType, alpha, beta, a, b, c cuda.Operand) error {
	if t, ok := ScaleType(x.compute); !ok || t != scale {
		return &ShapeError{Pkg: "cublas", Call: x.call, Arg: "alpha", Value: int64(scale),
			Reason: fmt.Sprintf("alpha and beta are %v; compute type %v scales by %v", scale, x.compute, t)}
	}
	st, err := h.lock(x.call)
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	small := fits32(x.m, x.n, x.k, x.lda, x.ldb, x.ldc, x.batch)
	sym := x.symbol(small)
	ops := [6]cuda.Operand{a, b, c, alpha, beta}
	nops := 5 + st.workspaceOperand((*[1]cuda.Operand)(ops[5:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		if err := SetPointerMode(st.raw, CUBLAS_POINTER_MODE_DEVICE); err != nil {
			return callErr("cublasSetPointerMode_v2", err)
		}
		err := callErr(sym, x.raw(st.raw, small, unsafe.Pointer(devPtr[byte](ops[0].Ptr())), unsafe.Pointer(devPtr[byte](ops[1].Ptr())),
			unsafe.Pointer(devPtr[byte](ops[2].Ptr())), unsafe.Pointer(devPtr[byte](ops[3].Ptr())), unsafe.Pointer(devPtr[byte](ops[4].Ptr()))))
		if rerr := SetPointerMode(st.raw, CUBLAS_POINTER_MODE_HOST); rerr != nil && err == nil {
			err = callErr("cublasSetPointerMode_v2", rerr)
		}
		return err
	})
}

// scalars checks the device scalars of a call: one element each at least.
func scalars[S Elem](call string, alpha, beta cuda.Slice[S]) error {
	for _, s := range [2]struct {
		name string
		n    int
	}{{"alpha", size(alpha)}, {"beta", size(beta)}} {
		if s.n < 0 {
			return nilSlice(call, s.name)
		}
		if s.n < 1 {
			return &ShapeError{Pkg: "cublas", Call: call, Arg: s.name, Rows: 1, Cols: 1, LD: 1, Count: 1, Need: 1, Len: s.n,
				Reason: s.name + " has no element"}
		}
	}
	return nil
}

// GemmStridedBatchedEx is GemmStridedBatched with GemmEx's element and
// compute types (cublasGemmStridedBatchedEx, or its _64 form): batch
// products C[i] = alpha*op(A[i])*op(B[i]) + beta*C[i], column-major, the
// matrices of each operand strideA, strideB and strideC elements apart in
// one Slice. A stride of 0 for A or B uses one matrix for every product
// (a broadcast operand); the output matrices must not overlap. alpha and
// beta are converted to compute's scale type (ScaleType). Shapes are
// checked first (a *ShapeError matching ErrShape); a zero Slice is
// cuda.ErrNil.
func GemmStridedBatchedEx[TA, TB, TC Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha float64,
	a cuda.Slice[TA], lda, strideA int, b cuda.Slice[TB], ldb, strideB int, beta float64,
	c cuda.Slice[TC], ldc, strideC, batch int, compute ComputeType) error {
	x := exCall{call: "GemmStridedBatchedEx", transA: transA, transB: transB, m: m, n: n, k: k,
		lda: lda, ldb: ldb, ldc: ldc, sa: int64(strideA), sb: int64(strideB), sc: int64(strideC), batch: batch,
		at: DataTypeOf[TA](), bt: DataTypeOf[TB](), ct: DataTypeOf[TC](), compute: compute, strided: true}
	if err := x.check(size(a), size(b), size(c)); err != nil {
		return err
	}
	return x.runHost(h, alpha, beta, a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite))
}

// GemmStridedBatchedExRowMajor is GemmStridedBatchedEx on row-major
// matrices, as a Go program holds them: C[i] = alpha*op(A[i])*op(B[i]) +
// beta*C[i] with op(A[i]) m x k, op(B[i]) k x n and C[i] m x n, element
// (r, c) of a matrix X at X[r*ldX + c] (ldX at least its columns). Like
// GemmRowMajor it multiplies the transposes, C^T = op(B)^T op(A)^T, which
// are the same memory read column-major: no copy. A stride of 0 broadcasts
// A or B (a weight matrix shared by a batch of activations). Shape errors
// name the arguments as this function takes them.
func GemmStridedBatchedExRowMajor[TA, TB, TC Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha float64,
	a cuda.Slice[TA], lda, strideA int, b cuda.Slice[TB], ldb, strideB int, beta float64,
	c cuda.Slice[TC], ldc, strideC, batch int, compute ComputeType) error {
	const call = "GemmStridedBatchedExRowMajor"
	if err := rowMajorCheck(call, transA, transB, m, n, k, size(a), lda, int64(strideA), size(b), ldb, int64(strideB),
		size(c), ldc, int64(strideC), batch); err != nil {
		return err
	}
	x := exCall{call: call, transA: transB, transB: transA, m: n, n: m, k: k,
		lda: ldb, ldb: lda, ldc: ldc, sa: int64(strideB), sb: int64(strideA), sc: int64(strideC), batch: batch,
		at: DataTypeOf[TB](), bt: DataTypeOf[TA](), ct: DataTypeOf[TC](), compute: compute, strided: true}
	return x.runHost(h, alpha, beta, b.Operand(cuda.Read), a.Operand(cuda.Read), c.Operand(cuda.ReadWrite))
}

// rowMajorCheck checks a row-major strided batch under the names the
// caller used: a row-major r x c matrix is a column-major c x r one.
func rowMajorCheck(call string, transA, transB Operation, m, n, k, la, lda int, sa int64, lb, ldb int, sb int64,
	lc, ldc int, sc int64, batch int) error {
	if err := checkOps(call, transA, transB, m, n, k); err != nil {
		return err
	}
	if batch < 0 {
		return shapeErr(call, "batch", int64(batch), "batch is %d", batch)
	}
	ra, ca := stored(transA, m, k)
	if err := batched(call, "A", false, ca, ra, lda, sa, batch, la); err != nil {
		return err
	}
	rb, cb := stored(transB, k, n)
	if err := batched(call, "B", false, cb, rb, ldb, sb, batch, lb); err != nil {
		return err
	}
	return batched(call, "C", true, n, m, ldc, sc, batch, lc)
}

// GemmExDevice is GemmEx with alpha and beta in device memory (the first
// element of each Slice), read when the work runs rather than when it is
// submitted: a captured graph then reads the scalars the program last
// wrote there at each launch. S must be compute's scale type (ScaleType:
// float32 for the 32F compute types); others are a *ShapeError naming
// alpha. The handle is in CUBLAS_POINTER_MODE_DEVICE for the call alone,
// which holds the handle as SetMathMode does: calls on the same handle
// from other goroutines wait for it. alpha and beta are recorded as read
// by the stream, as A and B are.
func GemmExDevice[TA, TB, TC, S Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha cuda.Slice[S],
	a cuda.Slice[TA], lda int, b cuda.Slice[TB], ldb int, beta cuda.Slice[S], c cuda.Slice[TC], ldc int, compute ComputeType) error {
	x := exCall{call: "GemmExDevice", transA: transA, transB: transB, m: m, n: n, k: k,
		lda: lda, ldb: ldb, ldc: ldc, batch: 1,
		at: DataTypeOf[TA](), bt: DataTypeOf[TB](), ct: DataTypeOf[TC](), compute: compute}
	if err := x.check(size(a), size(b), size(c)); err != nil {
		return err
	}
	if err := scalars(x.call, alpha, beta); err != nil {
		return err
	}
	return x.runDevice(h, DataTypeOf[S](), alpha.Operand(cuda.Read), beta.Operand(cuda.Read),
		a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite))
}

// GemmStridedBatchedExDevice is GemmStridedBatchedEx with alpha and beta
// in device memory, as GemmExDevice takes them.
func GemmStridedBatchedExDevice[TA, TB, TC, S Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha cuda.Slice[S],
	a cuda.Slice[TA], lda, strideA int, b cuda.Slice[TB], ldb, strideB int, beta cuda.Slice[S],
	c cuda.Slice[TC], ldc, strideC, batch int, compute ComputeType) error {
	x := exCall{call: "GemmStridedBatchedExDevice", transA: transA, transB: transB, m: m, n: n, k: k,
		lda: lda, ldb: ldb, ldc: ldc, sa: int64(strideA), sb: int64(strideB), sc: int64(strideC), batch: batch,
		at: DataTypeOf[TA](), bt: DataTypeOf[TB](), ct: DataTypeOf[TC](), compute: compute, strided: true}
	if err := x.check(size(a), size(b), size(c)); err != nil {
		return err
	}
	if err := scalars(x.call, alpha, beta); err != nil {
		return err
	}
	return x.runDevice(h, DataTypeOf[S](), alpha.Operand(cuda.Read), beta.Operand(cuda.Read),
		a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.ReadWrite))
}
