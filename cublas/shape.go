package cublas

import (
	"errors"
	"fmt"
	"math"

	"github.com/purecuda/purecuda/cuda"
)

// ErrShape is matched (errors.Is) by the error of a call whose sizes,
// leading dimensions, strides or increments do not fit its Slices, or are
// out of range: a *ShapeError, which names the argument. Nothing is
// submitted.
var ErrShape = errors.New("cublas: bad shape")

// ShapeError is the error of a call refused for its shape, before anything
// reaches the library: which argument is wrong, and the sizes that make it
// so. It matches ErrShape (errors.Is); errors.As finds it.
type ShapeError struct {
	Pkg  string // the package that refused the call: "cublas" or "cublaslt"
	Call string // the function refused: "Gemm", "GemmStridedBatchedEx", "Matmul", ...
	// Arg is the argument at fault, as the function's documentation names
	// it: a matrix or vector ("A", "B", "C", "x", "bias", "A[2]" for a
	// Batch's third), or a number ("m", "ldA", "strideC", "incx", "batch",
	// "transA", "compute").
	Arg string
	// Value is Arg's value when Arg is a number (a negative size, a
	// leading dimension below the rows, a zero increment).
	Value int64
	// For a matrix or vector argument: its shape as stored (Rows x Cols;
	// a vector is Rows x 1), its leading dimension or increment (LD), the
	// distance between the matrices of a strided batch (Stride) and their
	// count (Count, 1 for one matrix); Need is the elements these ask
	// for and Len the elements the Slice has (both 0 where the length
	// is not the fault).
	Rows, Cols, LD int
	Stride         int64
	Count          int
	Need, Len      int
	// Reason says what is wrong, in words.
	Reason string
}

// Error is "Pkg: Call: Reason" ("cublas" when Pkg is empty).
func (e *ShapeError) Error() string {
	pkg := e.Pkg
	if pkg == "" {
		pkg = "cublas"
	}
	return pkg + ": " + e.Call + ": " + e.Reason
}

// Is reports whether target is ErrShape.
func (e *ShapeError) Is(target error) bool { return target == ErrShape }

// shapeErr names the call and the argument that is wrong, with the
// argument's value.
func shapeErr(call, arg string, value int64, format string, args ...any) error {
	return &ShapeError{Pkg: "cublas", Call: call, Arg: arg, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// size is a Slice's length for the checks: -1 for the zero Slice, which
// the error path reports as cuda.ErrNil (a zero Slice of a matrix that
// has no elements is refused by Stream.Do, as cuda refuses it).
func size[T any](x cuda.Slice[T]) int {
	if x == (cuda.Slice[T]{}) {
		return -1
	}
	return x.Len()
}

// nilSlice is the error of a zero Slice given where a matrix or vector
// with elements is needed.
//
//go:noinline
func nilSlice(call, name string) error {
	return fmt.Errorf("cublas: %s: %s is the zero Slice: %w", call, name, cuda.ErrNil)
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
	return shapeErr(call, name, int64(op), "%s is %v, not NoTrans, Trans or ConjTrans", name, op)
}

// dims refuses negative sizes.
func dims(call string, names string, vals ...int) error {
	for i, v := range vals {
		if v < 0 {
			return shapeErr(call, string(names[i]), int64(v), "%c is %d", names[i], v)
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
	if n < 0 {
		return nilSlice(call, name)
	}
	if ld < max(1, rows) {
		return &ShapeError{Pkg: "cublas", Call: call, Arg: "ld" + name, Value: int64(ld), Rows: rows, Cols: cols, LD: ld, Count: 1,
			Reason: fmt.Sprintf("ld%s is %d, below max(1, %d rows)", name, ld, rows)}
	}
	need, ok := span(rows, cols, ld)
	if !ok {
		return &ShapeError{Pkg: "cublas", Call: call, Arg: name, Rows: rows, Cols: cols, LD: ld, Count: 1, Need: math.MaxInt, Len: n,
			Reason: fmt.Sprintf("%s: a %dx%d matrix with ld%s %d needs more elements than an int counts (overflow), the Slice has %d", name, rows, cols, name, ld, n)}
	}
	return &ShapeError{Pkg: "cublas", Call: call, Arg: name, Rows: rows, Cols: cols, LD: ld, Count: 1, Need: need, Len: n,
		Reason: fmt.Sprintf("%s: a %dx%d matrix with ld%s %d needs %d elements, the Slice has %d", name, rows, cols, name, ld, need, n)}
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
// stride elements apart; the matrices of an output must not overlap (a
// stride of 0 broadcasts an input matrix to every product).
func batched(call, name string, output bool, rows, cols, ld int, stride int64, count, n int) error {
	if err := matrix(call, name, rows, cols, ld, math.MaxInt); err != nil {
		return err
	}
	if rows == 0 || cols == 0 || count == 0 {
		return nil
	}
	if n < 0 {
		return nilSlice(call, name)
	}
	one, _ := span(rows, cols, ld)
	if stride < 0 || output && count > 1 && stride < int64(one) ||
		count > 1 && stride > int64(math.MaxInt-one)/int64(count-1) || int(stride)*(count-1)+one > n {
		return batchedErr(call, name, output, rows, cols, ld, stride, count, n)
	}
	return nil
}

// batchedErr is batched's error, made out of line.
//
//go:noinline
func batchedErr(call, name string, output bool, rows, cols, ld int, stride int64, count, n int) error {
	one, _ := span(rows, cols, ld)
	e := &ShapeError{Pkg: "cublas", Call: call, Arg: name, Rows: rows, Cols: cols, LD: ld, Stride: stride, Count: count}
	switch {
	case stride < 0:
		e.Arg, e.Value = "stride"+name, stride
		e.Reason = fmt.Sprintf("stride%s is %d", name, stride)
	case output && count > 1 && stride < int64(one):
		e.Arg, e.Value = "stride"+name, stride
		e.Reason = fmt.Sprintf("stride%s is %d: the %d output matrices of %d elements overlap", name, stride, count, one)
	case count > 1 && stride > int64(math.MaxInt-one)/int64(count-1):
		e.Need, e.Len = math.MaxInt, n
		e.Reason = fmt.Sprintf("%s: %d matrices %d elements apart overflow", name, count, stride)
	default:
		need := int(stride)*(count-1) + one
		e.Need, e.Len = need, n
		e.Reason = fmt.Sprintf("%s: %d matrices of %dx%d (ld%s %d) %d elements apart need %d elements, the Slice has %d",
			name, count, rows, cols, name, ld, stride, need, n)
	}
	return e
}

// vector checks a vector argument of n elements with increment inc in a
// Slice of length l: 1 + (n-1)*|inc| elements.
func vector(call, name string, n, inc, l int) error {
	if inc == 0 {
		return shapeErr(call, "inc"+name, 0, "inc%s is 0", name)
	}
	if n == 0 {
		return nil
	}
	if l < 0 {
		return nilSlice(call, name)
	}
	a := inc
	if a < 0 {
		a = -a
	}
	if n > 1 && a > (math.MaxInt-1)/(n-1) || 1+(n-1)*a > l {
		return vectorErr(call, name, n, inc, l)
	}
	return nil
}

// vectorErr is vector's error on the length, made out of line.
//
//go:noinline
func vectorErr(call, name string, n, inc, l int) error {
	a := max(inc, -inc)
	e := &ShapeError{Pkg: "cublas", Call: call, Arg: name, Rows: n, Cols: 1, LD: inc, Count: 1, Len: l}
	if n > 1 && a > (math.MaxInt-1)/(n-1) {
		e.Need = math.MaxInt
		e.Reason = fmt.Sprintf("%s: %d elements with inc%s %d overflow", name, n, name, inc)
		return e
	}
	e.Need = 1 + (n-1)*a
	e.Reason = fmt.Sprintf("%s: %d elements with inc%s %d need %d, the Slice has %d", name, n, name, inc, e.Need, l)
	return e
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
// (as stored) with leading dimension ld, in a Slice of n elements; n < 0
// stands for the zero Slice, refused with cuda.ErrNil. A shape error is a
// *ShapeError naming call and the matrix.
func CheckMatrix(call, name string, rows, cols, ld, n int) error {
	return CheckBatch(call, name, false, rows, cols, ld, 0, 1, n)
}

// CheckBatch is CheckMatrix for a strided batch of count matrices, stride
// elements apart in one Slice; output says that they are written, and
// so must not overlap.
func CheckBatch(call, name string, output bool, rows, cols, ld int, stride int64, count, n int) error {
	if err := dims(call, "rc", rows, cols); err != nil {
		return err
	}
	if count < 0 {
		return shapeErr(call, "count", int64(count), "%s: a batch of %d", name, count)
	}
	if count <= 1 {
		return matrix(call, name, rows, cols, ld, n)
	}
	return batched(call, name, output, rows, cols, ld, stride, count, n)
}
