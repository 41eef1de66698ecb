package cublas

import (
	"errors"
	"fmt"
	"math"
)

// ErrShape is matched (errors.Is) by the error of a call whose sizes,
// leading dimensions, strides or increments do not fit its Slices, or are
// out of range; the message names the argument. Nothing is submitted.
var ErrShape = errors.New("cublas: bad shape")

// shapeErr names the call and the argument that is wrong.
func shapeErr(call, format string, args ...any) error {
	return fmt.Errorf("cublas: %s: %s: %w", call, fmt.Sprintf(format, args...), ErrShape)
}

// NoTrans, Trans and ConjTrans say how a matrix argument is used: as it is,
// transposed, or conjugate-transposed.
const (
	NoTrans   = CUBLAS_OP_N
	Trans     = CUBLAS_OP_T
	ConjTrans = CUBLAS_OP_C
)

// The checks below are small enough to be inlined into each call, their
// errors made out of line: a call's checks cost a few comparisons.

// checkOp refuses an Operation that is not N, T or C.
func checkOp(call, name string, op Operation) error {
	if !opOK(op) {
		return opErr(call, name, op)
	}
	return nil
}

func opOK(op Operation) bool { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C }

//go:noinline
func opErr(call, name string, op Operation) error {
	return shapeErr(call, "%s is %v, not NoTrans, Trans or ConjTrans", name, op)
}

// dims refuses negative sizes.
func dims(call string, names string, vals ...int) error {
	for i, v := range vals {
		if v < 0 {
			return shapeErr(call, "%c is %d", names[i], v)
		}
	}
	return nil
}

// matrix checks a column-major matrix argument of rows x cols (as stored:
// op(X) transposed back) with leading dimension ld, in a Slice of length
// n starting at element 0: ld >= max(1, rows), and the last element,
// (cols-1)*ld + rows - 1, inside the Slice.
func matrix(call, name string, rows, cols, ld, n int) error {
	if !matrixOK(rows, cols, ld, n) {
		return matrixErr(call, name, rows, cols, ld, n)
	}
	return nil
}

// matrixOK is matrix's check without the error.
func matrixOK(rows, cols, ld, n int) bool {
	if ld < max(1, rows) {
		return false
	}
	if rows == 0 || cols == 0 {
		return true
	}
	need, ok := span(rows, cols, ld)
	return ok && need <= n
}

//go:noinline
func matrixErr(call, name string, rows, cols, ld, n int) error {
	if ld < max(1, rows) {
		return shapeErr(call, "ld%s is %d, below max(1, %d rows)", name, ld, rows)
	}
	need, _ := span(rows, cols, ld)
	return shapeErr(call, "%s: a %dx%d matrix with ld%s %d needs %d elements, the Slice has %d", name, rows, cols, name, ld, need, n)
}

// stored gives the stored shape of op(X) when op(X) is rows x cols.
func stored(op Operation, rows, cols int) (int, int) {
	if op == CUBLAS_OP_N {
		return rows, cols
	}
	return cols, rows
}

// span is the elements a rows x cols matrix with leading dimension ld
// covers; ok is false on overflow.
func span(rows, cols, ld int) (int, bool) {
	if cols > 1 && ld > (math.MaxInt-rows)/(cols-1) {
		return 0, false
	}
	return (cols-1)*ld + rows, true
}

// batched checks a strided batch of count matrices, each as matrix checks,
// stride elements apart.
func batched(call, name string, rows, cols, ld int, stride int64, count, n int) error {
	if err := matrix(call, name, rows, cols, ld, math.MaxInt); err != nil {
		return err
	}
	if rows == 0 || cols == 0 || count == 0 {
		return nil
	}
	one, _ := span(rows, cols, ld)
	if stride < 0 {
		return shapeErr(call, "stride%s is %d", name, stride)
	}
	if name == "C" && count > 1 && stride < int64(one) {
		return shapeErr(call, "strideC is %d: the %d output matrices of %d elements overlap", stride, count, one)
	}
	if count > 1 && stride > int64(math.MaxInt-one)/int64(count-1) {
		return shapeErr(call, "%s: %d matrices %d elements apart overflow", name, count, stride)
	}
	need := int(stride)*(count-1) + one
	if need > n {
		return shapeErr(call, "%s: %d matrices of %dx%d (ld%s %d) %d elements apart need %d elements, the Slice has %d",
			name, count, rows, cols, name, ld, stride, need, n)
	}
	return nil
}

// vector checks a vector argument of n elements with increment inc in a
// Slice of length l: 1 + (n-1)*|inc| elements.
func vector(call, name string, n, inc, l int) error {
	if inc == 0 {
		return shapeErr(call, "inc%s is 0", name)
	}
	if n == 0 {
		return nil
	}
	a := inc
	if a < 0 {
		a = -a
	}
	if n > 1 && a > (math.MaxInt-1)/(n-1) {
		return shapeErr(call, "%s: %d elements with inc%s %d overflow", name, n, name, inc)
	}
	if need := 1 + (n-1)*a; need > l {
		return shapeErr(call, "%s: %d elements with inc%s %d need %d, the Slice has %d", name, n, name, inc, need, l)
	}
	return nil
}

// fits32 reports whether every value fits a C int, so that the 32-bit
// entry points can take them; otherwise the _64 ones do.
func fits32(vals ...int) bool {
	// v ^ v>>63 is v, or -v-1 for a negative v: at most MaxInt32 exactly
	// when v fits; the OR of such values is at most MaxInt32 when all are.
	hi := 0
	for _, v := range vals {
		hi |= v ^ v>>63
	}
	return hi <= math.MaxInt32
}

// CheckMatrix checks a column-major matrix argument, as the calls of this
// package do, for packages built on it (cublaslt): a rows x cols matrix
// (as stored) with leading dimension ld, in a Slice of n elements. The
// error matches ErrShape and names call and the matrix.
func CheckMatrix(call, name string, rows, cols, ld, n int) error {
	if err := dims(call, "rc", rows, cols); err != nil {
		return err
	}
	return matrix(call, name, rows, cols, ld, n)
}
