package cublas

import (
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
)

// Axpy computes y = alpha*x + y over n elements, incx and incy apart
// (cublasSaxpy_v2 / cublasDaxpy_v2, or their _64 forms). A negative
// increment walks its vector from the end, as BLAS does.
func Axpy[T Float](h *BLAS, n int, alpha T, x cuda.Slice[T], incx int, y cuda.Slice[T], incy int) error {
	const call = "Axpy"
	if err := dims(call, "n", n); err != nil {
		return err
	}
	if err := vector(call, "x", n, incx, size(x)); err != nil {
		return err
	}
	if err := vector(call, "y", n, incy, size(y)); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(n, incx, incy)
	sym := symbol[T]("cublasSaxpy_v2", "cublasSaxpy_v2_64", "cublasDaxpy_v2", "cublasDaxpy_v2_64", small)
	ops := [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.ReadWrite)}
	nops := 2 + st.workspaceOperand((*[1]cuda.Operand)(ops[2:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		px, py := ops[0].Ptr(), ops[1].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Saxpy(st.raw, int32(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](px), int32(incx), devPtr[float32](py), int32(incy))
		case isSingle[T]():
			err = Saxpy64(st.raw, int64(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](px), int64(incx), devPtr[float32](py), int64(incy))
		case small:
			err = Daxpy(st.raw, int32(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](px), int32(incx), devPtr[float64](py), int32(incy))
		default:
			err = Daxpy64(st.raw, int64(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](px), int64(incx), devPtr[float64](py), int64(incy))
		}
		return callErr(sym, err)
	})
}

// Dot returns the dot product of x and y over n elements (cublasSdot_v2 /
// cublasDdot_v2, or their _64 forms). The result comes back to the host:
// the call waits for the stream's work up to it, and cannot be captured.
func Dot[T Float](h *BLAS, n int, x cuda.Slice[T], incx int, y cuda.Slice[T], incy int) (T, error) {
	const call = "Dot"
	if err := dims(call, "n", n); err != nil {
		return 0, err
	}
	if err := vector(call, "x", n, incx, size(x)); err != nil {
		return 0, err
	}
	if err := vector(call, "y", n, incy, size(y)); err != nil {
		return 0, err
	}
	st, err := h.acquire(call)
	if err != nil {
		return 0, err
	}
	defer st.life.Release()
	small := fits32(n, incx, incy)
	sym := symbol[T]("cublasSdot_v2", "cublasSdot_v2_64", "cublasDdot_v2", "cublasDdot_v2_64", small)
	ops := [3]cuda.Operand{x.Operand(cuda.Read), y.Operand(cuda.Read)}
	nops := 2 + st.workspaceOperand((*[1]cuda.Operand)(ops[2:]))
	var r T
	err = st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		px, py := ops[0].Ptr(), ops[1].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Sdot(st.raw, int32(n), devPtr[float32](px), int32(incx), devPtr[float32](py), int32(incy), (*float32)(unsafe.Pointer(&r)))
		case isSingle[T]():
			err = Sdot64(st.raw, int64(n), devPtr[float32](px), int64(incx), devPtr[float32](py), int64(incy), (*float32)(unsafe.Pointer(&r)))
		case small:
			err = Ddot(st.raw, int32(n), devPtr[float64](px), int32(incx), devPtr[float64](py), int32(incy), (*float64)(unsafe.Pointer(&r)))
		default:
			err = Ddot64(st.raw, int64(n), devPtr[float64](px), int64(incx), devPtr[float64](py), int64(incy), (*float64)(unsafe.Pointer(&r)))
		}
		return callErr(sym, err)
	})
	return r, err
}

// Nrm2 returns the Euclidean norm of x over n elements (cublasSnrm2_v2 /
// cublasDnrm2_v2, or their _64 forms). Like Dot, it waits for the result.
func Nrm2[T Float](h *BLAS, n int, x cuda.Slice[T], incx int) (T, error) {
	const call = "Nrm2"
	if err := dims(call, "n", n); err != nil {
		return 0, err
	}
	if incx <= 0 {
		return 0, shapeErr(call, "incx", int64(incx), "incx is %d, not positive", incx)
	}
	if err := vector(call, "x", n, incx, size(x)); err != nil {
		return 0, err
	}
	st, err := h.acquire(call)
	if err != nil {
		return 0, err
	}
	defer st.life.Release()
	small := fits32(n, incx)
	sym := symbol[T]("cublasSnrm2_v2", "cublasSnrm2_v2_64", "cublasDnrm2_v2", "cublasDnrm2_v2_64", small)
	ops := [2]cuda.Operand{x.Operand(cuda.Read)}
	nops := 1 + st.workspaceOperand((*[1]cuda.Operand)(ops[1:]))
	var r T
	err = st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		px := ops[0].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Snrm2(st.raw, int32(n), devPtr[float32](px), int32(incx), (*float32)(unsafe.Pointer(&r)))
		case isSingle[T]():
			err = Snrm264(st.raw, int64(n), devPtr[float32](px), int64(incx), (*float32)(unsafe.Pointer(&r)))
		case small:
			err = Dnrm2(st.raw, int32(n), devPtr[float64](px), int32(incx), (*float64)(unsafe.Pointer(&r)))
		default:
			err = Dnrm264(st.raw, int64(n), devPtr[float64](px), int64(incx), (*float64)(unsafe.Pointer(&r)))
		}
		return callErr(sym, err)
	})
	return r, err
}

// Scal computes x = alpha*x over n elements, incx apart (cublasSscal_v2 /
// cublasDscal_v2, or their _64 forms).
func Scal[T Float](h *BLAS, n int, alpha T, x cuda.Slice[T], incx int) error {
	const call = "Scal"
	if err := dims(call, "n", n); err != nil {
		return err
	}
	if incx <= 0 {
		return shapeErr(call, "incx", int64(incx), "incx is %d, not positive", incx)
	}
	if err := vector(call, "x", n, incx, size(x)); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(n, incx)
	sym := symbol[T]("cublasSscal_v2", "cublasSscal_v2_64", "cublasDscal_v2", "cublasDscal_v2_64", small)
	ops := [2]cuda.Operand{x.Operand(cuda.ReadWrite)}
	nops := 1 + st.workspaceOperand((*[1]cuda.Operand)(ops[1:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		px := ops[0].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Sscal(st.raw, int32(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](px), int32(incx))
		case isSingle[T]():
			err = Sscal64(st.raw, int64(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](px), int64(incx))
		case small:
			err = Dscal(st.raw, int32(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](px), int32(incx))
		default:
			err = Dscal64(st.raw, int64(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](px), int64(incx))
		}
		return callErr(sym, err)
	})
}

// Gemv computes y = alpha*op(A)*x + beta*y (cublasSgemv_v2 /
// cublasDgemv_v2, or their _64 forms) with A an m x n column-major
// matrix; x has n elements and y m when trans is NoTrans, the other way
// round otherwise.
func Gemv[T Float](h *BLAS, trans Operation, m, n int, alpha T, a cuda.Slice[T], lda int, x cuda.Slice[T], incx int,
	beta T, y cuda.Slice[T], incy int) error {
	const call = "Gemv"
	if err := checkOp(call, "trans", trans); err != nil {
		return err
	}
	if err := dims(call, "mn", m, n); err != nil {
		return err
	}
	if err := matrix(call, "A", m, n, lda, size(a)); err != nil {
		return err
	}
	nx, ny := n, m
	if trans != NoTrans {
		nx, ny = m, n
	}
	if err := vector(call, "x", nx, incx, size(x)); err != nil {
		return err
	}
	if err := vector(call, "y", ny, incy, size(y)); err != nil {
		return err
	}
	st, err := h.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	small := fits32(m, n, lda, incx, incy)
	sym := symbol[T]("cublasSgemv_v2", "cublasSgemv_v2_64", "cublasDgemv_v2", "cublasDgemv_v2_64", small)
	ops := [4]cuda.Operand{a.Operand(cuda.Read), x.Operand(cuda.Read), y.Operand(cuda.ReadWrite)}
	nops := 3 + st.workspaceOperand((*[1]cuda.Operand)(ops[3:]))
	return st.life.Stream().Do(sym, ops[:nops], func(libcuda.Stream) error {
		pa, px, py := ops[0].Ptr(), ops[1].Ptr(), ops[2].Ptr()
		var err error
		switch {
		case isSingle[T]() && small:
			err = Sgemv(st.raw, trans, int32(m), int32(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](pa), int32(lda),
				devPtr[float32](px), int32(incx), (*float32)(unsafe.Pointer(&beta)), devPtr[float32](py), int32(incy))
		case isSingle[T]():
			err = Sgemv64(st.raw, trans, int64(m), int64(n), (*float32)(unsafe.Pointer(&alpha)), devPtr[float32](pa), int64(lda),
				devPtr[float32](px), int64(incx), (*float32)(unsafe.Pointer(&beta)), devPtr[float32](py), int64(incy))
		case small:
			err = Dgemv(st.raw, trans, int32(m), int32(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](pa), int32(lda),
				devPtr[float64](px), int32(incx), (*float64)(unsafe.Pointer(&beta)), devPtr[float64](py), int32(incy))
		default:
			err = Dgemv64(st.raw, trans, int64(m), int64(n), (*float64)(unsafe.Pointer(&alpha)), devPtr[float64](pa), int64(lda),
				devPtr[float64](px), int64(incx), (*float64)(unsafe.Pointer(&beta)), devPtr[float64](py), int64(incy))
		}
		return callErr(sym, err)
	})
}
