package cublas

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
)

// Batch is a list of Slices for GemmBatchedEx: the Slices, and the device
// array of their addresses that cuBLAS reads, made once by NewBatch. Each
// call that takes the Batch holds and records every Slice of it, as it
// does a single one; a Slice of the Batch that is freed makes those calls
// fail with cuda.ErrFreed. Free the Batch (its address array) when done.
type Batch[T Elem] struct {
	slices []cuda.Slice[T]
	addrs  cuda.Slice[uint64]
}

// NewBatch makes a Batch of xs on the stream: it copies their device
// addresses into device memory allocated on s (in stream order; the copy
// waits until it is made). The Slices must belong to the stream's context.
func NewBatch[T Elem](s *cuda.Stream, xs []cuda.Slice[T]) (*Batch[T], error) {
	if len(xs) == 0 {
		return nil, fmt.Errorf("cublas: NewBatch of no Slices: %w", ErrShape)
	}
	host := make([]uint64, len(xs))
	for i, x := range xs {
		p := x.DevicePtr()
		if p == 0 {
			return nil, fmt.Errorf("cublas: NewBatch: Slice %d is zero or freed: %w", i, cuda.ErrFreed)
		}
		host[i] = uint64(p)
	}
	addrs, err := cuda.Alloc[uint64](s, len(xs))
	if err != nil {
		return nil, fmt.Errorf("cublas: NewBatch: %w", err)
	}
	if err := cuda.CopyToDevice(s, addrs, host); err != nil {
		return nil, errors.Join(fmt.Errorf("cublas: NewBatch: %w", err), addrs.Free())
	}
	return &Batch[T]{slices: append([]cuda.Slice[T](nil), xs...), addrs: addrs}, nil
}

// Len is the number of Slices.
func (b *Batch[T]) Len() int { return len(b.slices) }

// Free frees the address array (not the Slices), after the work that read
// it.
func (b *Batch[T]) Free() error {
	if b == nil {
		return fmt.Errorf("cublas: Batch.Free on a nil Batch: %w", cuda.ErrNil)
	}
	return b.addrs.Free()
}

// operands appends b's address array and Slices, read or written.
func (b *Batch[T]) operands(ops []cuda.Operand, access cuda.Access) []cuda.Operand {
	ops = append(ops, b.addrs.Operand(cuda.Read))
	for _, x := range b.slices {
		ops = append(ops, x.Operand(access))
	}
	return ops
}

// check checks every matrix of the Batch as matrix does.
func (b *Batch[T]) check(call, name string, rows, cols, ld int) error {
	if b == nil {
		return fmt.Errorf("cublas: %s: nil Batch %s: %w", call, name, cuda.ErrNil)
	}
	for i, x := range b.slices {
		if !matrixOK(rows, cols, ld, size(x)) { // the name is made for the error alone
			return matrixErr(call, fmt.Sprintf("%s[%d]", name, i), rows, cols, ld, size(x))
		}
	}
	return nil
}

// GemmBatchedEx computes C[i] = alpha*op(A[i])*op(B[i]) + beta*C[i] for
// every i of the Batches, which must have the same length, with GemmEx's
// element and compute types (cublasGemmBatchedEx, or its _64 form). Each
// matrix is checked as Gemm checks its arguments (ErrShape, naming the
// argument and the index). One allocation a call: the list of the
// Batches' Slices held for it.
func GemmBatchedEx[TA, TB, TC Elem](h *BLAS, transA, transB Operation, m, n, k int, alpha float64, a *Batch[TA], lda int,
	b *Batch[TB], ldb int, beta float64, c *Batch[TC], ldc int, compute ComputeType) error {
	const call = "GemmBatchedEx"
	if err := checkOps(call, transA, transB, m, n, k); err != nil {
		return err
	}
	ra, ca := stored(transA, m, k)
	if err := a.check(call, "A", ra, ca, lda); err != nil {
		return err
	}
	rb, cb := stored(transB, k, n)
	if err := b.check(call, "B", rb, cb, ldb); err != nil {
		return err
	}
	if err := c.check(call, "C", m, n, ldc); err != nil {
		return err
	}
	count := a.Len()
	if b.Len() != count || c.Len() != count {
		return shapeErr(call, "batch", int64(count), "the Batches hold %d, %d and %d matrices", a.Len(), b.Len(), c.Len())
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
	small := fits32(m, n, k, lda, ldb, ldc, count)
	sym := "cublasGemmBatchedEx"
	if !small {
		sym = "cublasGemmBatchedEx_64"
	}
	ops := make([]cuda.Operand, 0, 3*count+4)
	ops = a.operands(ops, cuda.Read)
	ops = b.operands(ops, cuda.Read)
	cAt := len(ops)
	ops = c.operands(ops, cuda.ReadWrite)
	var ws [1]cuda.Operand
	if st.workspaceOperand(&ws) > 0 {
		ops = append(ops, ws[0])
	}
	at, bt, ct := DataTypeOf[TA](), DataTypeOf[TB](), DataTypeOf[TC]()
	bAt := 1 + count
	return st.life.Stream().Do(sym, ops, func(libcuda.Stream) error {
		pa := devPtr[unsafe.Pointer](ops[0].Ptr())
		pb := devPtr[unsafe.Pointer](ops[bAt].Ptr())
		pc := devPtr[unsafe.Pointer](ops[cAt].Ptr())
		var err error
		if small {
			err = gemmBatchedEx(st.raw, transA, transB, int32(m), int32(n), int32(k), unsafe.Pointer(&al), pa, at, int32(lda),
				pb, bt, int32(ldb), unsafe.Pointer(&be), pc, ct, int32(ldc), int32(count), compute, CUBLAS_GEMM_DEFAULT)
		} else {
			err = gemmBatchedEx64(st.raw, transA, transB, int64(m), int64(n), int64(k), unsafe.Pointer(&al), pa, at, int64(lda),
				pb, bt, int64(ldb), unsafe.Pointer(&be), pc, ct, int64(ldc), int64(count), compute, CUBLAS_GEMM_DEFAULT)
		}
		return callErr(sym, err)
	})
}
