package cublaslt

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/libtypes"
)

// ErrShape is package cublas's: Matmul's shape errors match it, and are
// *cublas.ShapeError values.
var ErrShape = cublas.ErrShape

// ErrClosed is matched (errors.Is) by the error of every call on a closed
// Lt: Matmul, MatmulEx, Algorithms, Chosen, SetWorkspace and Close again.
// It is cuda.ErrClosed.
var ErrClosed = cuda.ErrClosed

// Elem is an element type of a matmul's matrices and vectors: package
// cublas's (float32, float64, libtypes.Half, libtypes.BFloat16, int8, int32) and
// the FP8 formats libtypes.Float8E4M3 and libtypes.Float8E5M2.
type Elem interface {
	float32 | float64 | libtypes.Half | libtypes.BFloat16 | int8 | int32 | libtypes.Float8E4M3 | libtypes.Float8E5M2
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
	case libtypes.Float8E4M3:
		return libtypes.CUDA_R_8F_E4M3
	case libtypes.Float8E5M2:
		return libtypes.CUDA_R_8F_E5M2
	}
	return libtypes.CUDA_R_32I
}

// Op describes a multiplication for Matmul and MatmulEx,
//
//	D = epilogue(alpha*op(A)*op(B) + beta*C + bias)
//
// on column-major matrices (see package cublas), or row-major ones with
// RowMajor: op(A) is M x K, op(B) K x N, C and D are M x N; with Batch > 1,
// Batch such products on matrices StrideA, StrideB and StrideC elements
// apart. It is what cuBLASLt's operation descriptor, matrix layouts and
// preference say, in Go form; an Lt keeps one plan per Op, element types,
// set of scale pointers and workspace size, made with one call of the
// heuristic (cublasLtMatmulAlgoGetHeuristic). The zero value of each
// field added after the first release keeps the earlier meaning.
type Op struct {
	TransA, TransB cublas.Operation   // NoTrans (the zero value) or Trans
	M, N, K        int                // the sizes
	LDA, LDB, LDC  int                // leading dimensions; 0: the stored matrix's rows (columns if RowMajor); C's are D's
	Compute        cublas.ComputeType // the arithmetic; 0: CUBLAS_COMPUTE_32F
	// Epilogue is what is applied to the result (see the package doc for
	// each): 0 or CUBLASLT_EPILOGUE_DEFAULT nothing; the forward
	// activations RELU and GELU, with a bias vector (_BIAS), with their
	// input kept for the backward pass (_AUX: GELU's input as a matrix,
	// ReLU's as a bit mask); the backward DRELU and DGELU, which read that
	// aux input, with the bias gradient (_BGRAD); BGRADA and BGRADB, the
	// bias gradient alone.
	Epilogue Epilogue

	// Batch is the number of products (the layouts' BATCH_COUNT); 0 or 1:
	// one.
	Batch int
	// StrideA, StrideB and StrideC are the elements between the matrices
	// of a batch (C's is D's). 0 for A or B uses one matrix for every
	// product (a broadcast operand); 0 for C means its matrices' size.
	StrideA, StrideB, StrideC int
	// RowMajor says that A, B, C and D are row-major (CUBLASLT_ORDER_ROW):
	// element (i, j) of X at X[i*ldX + j]. The _AUX, DRELU and DGELU
	// epilogues take column-major matrices only.
	RowMajor bool
	// AuxLD and AuxStride are the aux matrix's leading dimension and batch
	// stride, in elements, or in bits for ReLU's mask; 0: M rounded up to
	// 8 (to 128 for the mask), and that times N. cuBLASLt asks for
	// multiples of 8 (of 128 for the mask).
	AuxLD, AuxStride int
	// FastAccum asks FP8 matmuls for the faster, less accurate
	// accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM).
	FastAccum bool
	// Algo selects the algorithm by its rank among the heuristic's
	// answers (Algorithms lists them): 0 is the one the heuristic ranks
	// first. A rank beyond the answers is an error.
	Algo int
}

// Types are the element types of a matmul's operands: of A, B, C and D,
// and of the bias vector and the GELU aux matrix (their defaults, when
// the epilogue has none, are D's).
type Types struct {
	A, B, C, D, Bias, Aux libtypes.DataType
}

// TypesOf gives the Types of a matmul on A of TA, B of TB, C of TC and D
// of TD, whose bias and aux have D's type.
func TypesOf[TA, TB, TC, TD Elem]() Types {
	d := DataTypeOf[TD]()
	return Types{A: DataTypeOf[TA](), B: DataTypeOf[TB](), C: DataTypeOf[TC](), D: d, Bias: d, Aux: d}
}

// Extra holds the operands of MatmulEx beyond A, B, C and D; a zero Slice
// is one not given.
type Extra[TBias, TAux Elem] struct {
	// Bias is the bias vector of the _BIAS epilogues (M elements, shared
	// by a batch's products), read; or the bias gradient that the _BGRAD
	// epilogues and BGRADA write (M elements) and BGRADB writes (N).
	Bias cuda.Slice[TBias]
	// Aux is GELU's input, an M x N column-major matrix with leading
	// dimension Op.AuxLD: written by GELU_AUX and GELU_AUX_BIAS, read by
	// DGELU and DGELU_BGRAD.
	Aux cuda.Slice[TAux]
	// Mask is ReLU's bit mask, M x N bits column-major with leading
	// dimension Op.AuxLD bits: written by RELU_AUX and RELU_AUX_BIAS,
	// read by DRELU and DRELU_BGRAD.
	Mask cuda.Slice[byte]
	// ScaleA, ScaleB, ScaleC and ScaleD are device scalars (the first
	// element) in the compute type, for FP8: A and B are multiplied by
	// theirs, C by its, and the result by ScaleD before it is stored in D
	// (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ...). AmaxD receives the
	// largest absolute value of the result before ScaleD
	// (CUBLASLT_MATMUL_DESC_AMAX_D_POINTER). Each is used when given.
	ScaleA, ScaleB, ScaleC, ScaleD, AmaxD cuda.Slice[float32]
}

// Algo is one of the heuristic's answers for a matmul.
type Algo struct {
	Rank          int        // its place among the answers: Op.Algo selects it
	Algo          MatmulAlgo // cuBLASLt's opaque description
	WorkspaceSize uint64     // the workspace it needs, in bytes
	Waves         float32    // the heuristic's estimate of the waves of blocks it launches
}

// MaxAlgos is the number of answers a plan asks the heuristic for.
const MaxAlgos = 8

// epilogue says what an epilogue reads and writes.
type epilogue struct {
	bias    bool // reads a bias vector
	biasOut bool // writes a bias gradient
	biasN   bool // the gradient has N elements (BGRADB), not M
	aux     bool // uses Aux (GELU's input)
	mask    bool // uses Mask (ReLU's bits)
	auxOut  bool // writes the aux or the mask, rather than reads it
}

// epilogues is every epilogue Matmul and MatmulEx take.
var epilogues = map[Epilogue]epilogue{
	CUBLASLT_EPILOGUE_DEFAULT:       {},
	CUBLASLT_EPILOGUE_RELU:          {},
	CUBLASLT_EPILOGUE_GELU:          {},
	CUBLASLT_EPILOGUE_BIAS:          {bias: true},
	CUBLASLT_EPILOGUE_RELU_BIAS:     {bias: true},
	CUBLASLT_EPILOGUE_GELU_BIAS:     {bias: true},
	CUBLASLT_EPILOGUE_RELU_AUX:      {mask: true, auxOut: true},
	CUBLASLT_EPILOGUE_RELU_AUX_BIAS: {bias: true, mask: true, auxOut: true},
	CUBLASLT_EPILOGUE_GELU_AUX:      {aux: true, auxOut: true},
	CUBLASLT_EPILOGUE_GELU_AUX_BIAS: {bias: true, aux: true, auxOut: true},
	CUBLASLT_EPILOGUE_DRELU:         {mask: true},
	CUBLASLT_EPILOGUE_DRELU_BGRAD:   {mask: true, biasOut: true},
	CUBLASLT_EPILOGUE_DGELU:         {aux: true},
	CUBLASLT_EPILOGUE_DGELU_BGRAD:   {aux: true, biasOut: true},
	CUBLASLT_EPILOGUE_BGRADA:        {biasOut: true},
	CUBLASLT_EPILOGUE_BGRADB:        {biasOut: true, biasN: true},
}

// key is what a plan is made for.
type key struct {
	op     Op
	t      Types
	scales uint8 // which of ScaleA, ScaleB, ScaleC, ScaleD, AmaxD are given (bits 0 to 4)
	ws     int
}

// normalized fills Op's defaults.
func (op Op) normalized() Op {
	ra, ca := stored(op.TransA, op.M, op.K)
	rb, cb := stored(op.TransB, op.K, op.N)
	if op.RowMajor {
		ra, rb = ca, cb
	}
	if op.LDA == 0 {
		op.LDA = max(1, ra)
	}
	if op.LDB == 0 {
		op.LDB = max(1, rb)
	}
	if op.LDC == 0 {
		op.LDC = max(1, op.M)
		if op.RowMajor {
			op.LDC = max(1, op.N)
		}
	}
	if op.Compute == 0 {
		op.Compute = cublas.CUBLAS_COMPUTE_32F
	}
	if op.Epilogue == 0 {
		op.Epilogue = CUBLASLT_EPILOGUE_DEFAULT
	}
	if op.Batch <= 1 {
		op.Batch, op.StrideA, op.StrideB, op.StrideC = 1, 0, 0, 0
	} else if op.StrideC == 0 {
		op.StrideC = op.LDC * op.N
		if op.RowMajor {
			op.StrideC = op.LDC * op.M
		}
	}
	e := epilogues[op.Epilogue]
	if !e.aux && !e.mask {
		op.AuxLD, op.AuxStride = 0, 0
	} else {
		round := 8
		if e.mask {
			round = 128
		}
		if op.AuxLD == 0 {
			op.AuxLD = (max(1, op.M) + round - 1) / round * round
		}
		if op.Batch > 1 && op.AuxStride == 0 {
			op.AuxStride = op.AuxLD * op.N
		}
	}
	return op
}

func stored(t cublas.Operation, rows, cols int) (int, int) {
	if t == cublas.NoTrans {
		return rows, cols
	}
	return cols, rows
}

// pointer attributes set per call, in the order of plan.ptrs.
var pointerAttrs = [...]MatmulDescAttributes{
	CUBLASLT_MATMUL_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
	CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
	CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
	CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
}

// plan is an Op's descriptors and algorithm.
type plan struct {
	k      key
	mu     gosync.Mutex // serializes the setting of the pointers and the call that uses them
	desc   MatmulDesc
	a, b   MatrixLayout
	c, d   MatrixLayout // D's is C's when their types are the same
	algo   Algo
	algos  []Algo                               // the heuristic's answers, ranked
	ptrs   [len(pointerAttrs)]libcuda.Deviceptr // the pointers set on desc
	wsSize uint64
}

// destroy destroys the plan's descriptors; the context must be current.
func (p *plan) destroy() error {
	var errs []error
	if p.desc != 0 {
		errs = append(errs, MatmulDescDestroy(p.desc))
	}
	d := p.d
	if d == p.c {
		d = 0 // shared with C
	}
	for _, l := range []MatrixLayout{p.a, p.b, p.c, d} {
		if l != 0 {
			errs = append(errs, MatrixLayoutDestroy(l))
		}
	}
	return errors.Join(errs...)
}

// Matmul computes D = epilogue(alpha*op(A)*op(B) + beta*C + bias) as op
// says (cublasLtMatmul) on the Lt's stream, with the plan the Lt holds
// for the shape, made on first use. A and B have element type T, C, D
// and bias TC (cuBLASLt's table says which pairs it supports: float32
// with float32, libtypes.Half or libtypes.BFloat16 inputs with float32 or their
// own type as output, ...). D may be C. C may be the zero Slice when beta
// is 0; bias is needed by the bias epilogues only. alpha and beta are in
// the compute type's scale type (cublas.ScaleType). Sizes, leading
// dimensions and lengths are checked first (a *cublas.ShapeError matching
// ErrShape, naming the argument; a zero Slice that is needed is
// cuda.ErrNil); A, B, C and bias are recorded as read by the stream, D as
// written. Matmul is MatmulEx with A and B of one type, C, D and bias of
// another, and no aux or scales: the _AUX, DRELU and DGELU epilogues need
// MatmulEx.
func Matmul[T, TC cublas.Elem](lt *Lt, op Op, alpha float64, a, b cuda.Slice[T], beta float64, c, d, bias cuda.Slice[TC]) error {
	return matmulEx(lt, "Matmul", op, alpha, a, b, beta, c, d, &Extra[TC, TC]{Bias: bias})
}

// MatmulEx is Matmul with every operand's type of its own and the
// operands of the other epilogues and of FP8 in x: A of TA, B of TB (FP8
// inputs of two formats, E4M3 times E5M2, or 16-bit ones), C of TC and D
// of TD (for FP8, C may be 16-bit and D FP8), the bias of TBias (cuBLASLt's
// CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) and GELU's aux of TAux
// (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE). Which combinations run
// is cuBLASLt's table; FP8 on Hopper takes A transposed (TransA Trans)
// and B not. Every operand given is checked as Matmul checks its own, and
// recorded as read or written by the stream as the epilogue uses it.
func MatmulEx[TA, TB, TC, TD, TBias, TAux Elem](lt *Lt, op Op, alpha float64, a cuda.Slice[TA], b cuda.Slice[TB],
	beta float64, c cuda.Slice[TC], d cuda.Slice[TD], x Extra[TBias, TAux]) error {
	return matmulEx(lt, "MatmulEx", op, alpha, a, b, beta, c, d, &x)
}

// size is a Slice's length for the checks: -1 for the zero Slice.
func size[T any](x cuda.Slice[T]) int {
	if x == (cuda.Slice[T]{}) {
		return -1
	}
	return x.Len()
}

// lengths are the operands' lengths (size's: -1 for a zero Slice).
type lengths struct {
	a, b, c, d, bias, aux, mask int
	scales                      [5]int // ScaleA, ScaleB, ScaleC, ScaleD, AmaxD
}

func matmulEx[TA, TB, TC, TD, TBias, TAux Elem](lt *Lt, call string, op Op, alpha float64, a cuda.Slice[TA], b cuda.Slice[TB],
	beta float64, c cuda.Slice[TC], d cuda.Slice[TD], x *Extra[TBias, TAux]) error {
	op = op.normalized()
	n := lengths{a: size(a), b: size(b), c: size(c), d: size(d), bias: size(x.Bias), aux: size(x.Aux), mask: size(x.Mask),
		scales: [5]int{size(x.ScaleA), size(x.ScaleB), size(x.ScaleC), size(x.ScaleD), size(x.AmaxD)}}
	if err := check(call, op, n, beta); err != nil {
		return err
	}
	al, err := cublas.ScalarOf(op.Compute, alpha)
	if err != nil {
		return &cublas.ShapeError{Pkg: "cublaslt", Call: call, Arg: "Compute", Value: int64(op.Compute),
			Reason: fmt.Sprintf("compute type %v is unknown", op.Compute)}
	}
	be, _ := cublas.ScalarOf(op.Compute, beta)
	st, err := lt.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	t := Types{A: DataTypeOf[TA](), B: DataTypeOf[TB](), C: DataTypeOf[TC](), D: DataTypeOf[TD](), Bias: DataTypeOf[TD](), Aux: DataTypeOf[TD]()}
	e := epilogues[op.Epilogue]
	if e.bias || e.biasOut {
		t.Bias = DataTypeOf[TBias]()
	}
	if e.aux {
		t.Aux = DataTypeOf[TAux]()
	}
	k := key{op: op, t: t, ws: st.ws.Len()}
	for i, l := range n.scales {
		if l >= 0 {
			k.scales |= 1 << i
		}
	}
	p, err := st.plan(k)
	if err != nil {
		return err
	}
	// The operands, and where each pointer attribute's is (-1: none).
	var ops [13]cuda.Operand
	var at [len(pointerAttrs)]int8
	ops[0], ops[1], ops[3] = a.Operand(cuda.Read), b.Operand(cuda.Read), d.Operand(cuda.Write)
	if n.c >= 0 {
		ops[2] = c.Operand(cuda.Read)
	} else {
		ops[2] = d.Operand(cuda.Read) // beta is 0: C is not read, and D stands for it
	}
	nops := 4
	add := func(i int, o cuda.Operand) {
		ops[nops] = o
		at[i] = int8(nops)
		nops++
	}
	for i := range at {
		at[i] = -1
	}
	switch {
	case e.bias:
		add(0, x.Bias.Operand(cuda.Read))
	case e.biasOut:
		add(0, x.Bias.Operand(cuda.Write))
	}
	auxAccess := cuda.Read
	if e.auxOut {
		auxAccess = cuda.Write
	}
	switch {
	case e.aux:
		add(1, x.Aux.Operand(auxAccess))
	case e.mask:
		add(1, x.Mask.Operand(auxAccess))
	}
	for i, s := range [5]*cuda.Slice[float32]{&x.ScaleA, &x.ScaleB, &x.ScaleC, &x.ScaleD, &x.AmaxD} {
		if k.scales&(1<<i) != 0 {
			access := cuda.Read
			if i == 4 {
				access = cuda.Write
			}
			add(2+i, s.Operand(access))
		}
	}
	wsAt := -1
	if st.ws.Len() > 0 {
		ops[nops] = st.ws.Operand(cuda.ReadWrite)
		wsAt = nops
		nops++
	}
	return st.life.Stream().Do("cublasLtMatmul", ops[:nops], func(raw libcuda.Stream) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, j := range at {
			if j < 0 {
				continue
			}
			if ptr := ops[j].Ptr(); p.ptrs[i] != ptr {
				if err := MatmulDescSetAttribute(p.desc, pointerAttrs[i], unsafe.Pointer(&ptr), uint64(unsafe.Sizeof(ptr))); err != nil {
					return dl.Failed("cublaslt", fmt.Sprintf("cublasLtMatmulDescSetAttribute(%v)", pointerAttrs[i]), err)
				}
				p.ptrs[i] = ptr
			}
		}
		var ws unsafe.Pointer
		if wsAt >= 0 {
			ws = addr(ops[wsAt].Ptr())
		}
		err := matmul(st.raw, p.desc, unsafe.Pointer(&al), addr(ops[0].Ptr()), p.a, addr(ops[1].Ptr()), p.b,
			unsafe.Pointer(&be), addr(ops[2].Ptr()), p.c, addr(ops[3].Ptr()), p.d, &p.algo.Algo, ws, p.wsSize, raw)
		if err != nil {
			return dl.Failed("cublaslt", "cublasLtMatmul", err)
		}
		return nil
	})
}

// shapeErr is a *cublas.ShapeError of package cublaslt.
func shapeErr(call, arg string, value int64, format string, args ...any) error {
	return &cublas.ShapeError{Pkg: "cublaslt", Call: call, Arg: arg, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// ours names package cublaslt in a ShapeError of cublas's checks.
//
//go:noinline
func ours(err error) error {
	var se *cublas.ShapeError
	if errors.As(err, &se) {
		se.Pkg = "cublaslt"
	}
	return err
}

// matrixArg checks a matrix operand of op: rows x cols as op lays it out
// (column-major, or row-major with op.RowMajor), ld, and with a batch its
// stride.
func matrixArg(call, name string, op Op, output bool, rows, cols, ld, stride, n int) error {
	if op.RowMajor {
		rows, cols = cols, rows
	}
	if n < 0 { // M, N and K are positive: every matrix has elements
		return vectorArg(call, name, 1, n)
	}
	if err := cublas.CheckBatch(call, name, output, rows, cols, ld, int64(stride), op.Batch, n); err != nil {
		return ours(err)
	}
	return nil
}

// vectorArg checks a vector operand of want elements.
//
//go:noinline
func vectorArg(call, name string, want, n int) error {
	if n < 0 {
		return fmt.Errorf("cublaslt: %s: %s is the zero Slice: %w", call, name, cuda.ErrNil)
	}
	return &cublas.ShapeError{Pkg: "cublaslt", Call: call, Arg: name, Rows: want, Cols: 1, LD: 1, Count: 1, Need: want, Len: n,
		Reason: fmt.Sprintf("%s has %d elements, the epilogue needs %d", name, n, want)}
}

// check checks an Op against the operands' lengths.
func check(call string, op Op, n lengths, beta float64) error {
	for _, t := range []struct {
		name string
		op   cublas.Operation
	}{{"TransA", op.TransA}, {"TransB", op.TransB}} {
		if t.op != cublas.NoTrans && t.op != cublas.Trans {
			return shapeErr(call, t.name, int64(t.op), "%s is %v", t.name, t.op)
		}
	}
	e, ok := epilogues[op.Epilogue]
	if !ok {
		return shapeErr(call, "Epilogue", int64(op.Epilogue), "epilogue %v is not one %s takes", op.Epilogue, call)
	}
	if op.M <= 0 || op.N <= 0 || op.K <= 0 {
		return shapeErr(call, "M", int64(min(op.M, op.N, op.K)), "M, N and K must be positive (%d, %d, %d)", op.M, op.N, op.K)
	}
	if op.Batch > 1 && (op.StrideA < 0 || op.StrideB < 0) {
		return shapeErr(call, "StrideA", int64(min(op.StrideA, op.StrideB)), "StrideA and StrideB are %d and %d", op.StrideA, op.StrideB)
	}
	if op.Algo < 0 || op.Algo >= MaxAlgos {
		return shapeErr(call, "Algo", int64(op.Algo), "Algo is %d, not a rank among the heuristic's %d answers", op.Algo, MaxAlgos)
	}
	if op.RowMajor && (e.aux || e.mask) {
		return shapeErr(call, "RowMajor", 1, "epilogue %v takes column-major matrices only", op.Epilogue)
	}
	ra, ca := stored(op.TransA, op.M, op.K)
	if err := matrixArg(call, "A", op, false, ra, ca, op.LDA, op.StrideA, n.a); err != nil {
		return err
	}
	rb, cb := stored(op.TransB, op.K, op.N)
	if err := matrixArg(call, "B", op, false, rb, cb, op.LDB, op.StrideB, n.b); err != nil {
		return err
	}
	if err := matrixArg(call, "D", op, true, op.M, op.N, op.LDC, op.StrideC, n.d); err != nil {
		return err
	}
	if n.c >= 0 || beta != 0 {
		if err := matrixArg(call, "C", op, false, op.M, op.N, op.LDC, op.StrideC, n.c); err != nil {
			return err
		}
	}
	if e.bias || e.biasOut {
		want := op.M
		if e.biasN {
			want = op.N
		}
		if n.bias < want {
			return vectorArg(call, "bias", want, n.bias)
		}
	}
	if e.aux || e.mask {
		if err := checkAux(call, op, e, n); err != nil {
			return err
		}
	}
	for i, name := range [5]string{"ScaleA", "ScaleB", "ScaleC", "ScaleD", "AmaxD"} {
		if n.scales[i] == 0 {
			return vectorArg(call, name, 1, 0)
		}
	}
	return nil
}

// checkAux checks the aux matrix or ReLU's mask: ld at least M and a
// multiple of 8 (of 128 bits for the mask), a batch stride of such a
// multiple, and the elements (bits, in bytes) they need.
func checkAux(call string, op Op, e epilogue, n lengths) error {
	name, unit, l := "Aux", 8, n.aux
	if e.mask {
		name, unit, l = "Mask", 128, n.mask
	}
	if op.AuxLD < op.M || op.AuxLD%unit != 0 {
		return shapeErr(call, "AuxLD", int64(op.AuxLD), "AuxLD is %d: at least M = %d and a multiple of %d", op.AuxLD, op.M, unit)
	}
	if op.Batch > 1 && (op.AuxStride < 0 || op.AuxStride%unit != 0) {
		return shapeErr(call, "AuxStride", int64(op.AuxStride), "AuxStride is %d, not a multiple of %d", op.AuxStride, unit)
	}
	if l < 0 {
		return fmt.Errorf("cublaslt: %s: epilogue %v needs %s, the zero Slice: %w", call, op.Epilogue, name, cuda.ErrNil)
	}
	need := (op.N-1)*op.AuxLD + op.M + (op.Batch-1)*op.AuxStride
	have := l
	if e.mask {
		have = l * 8
	}
	if need > have {
		return &cublas.ShapeError{Pkg: "cublaslt", Call: call, Arg: name, Rows: op.M, Cols: op.N, LD: op.AuxLD,
			Stride: int64(op.AuxStride), Count: op.Batch, Need: need, Len: l,
			Reason: fmt.Sprintf("%s: %d matrices of %dx%d with ld %d need %d elements (bits for the mask), it has %d", name, op.Batch, op.M, op.N, op.AuxLD, need, have)}
	}
	return nil
}

// addr is a device address as the void * cuBLASLt's prototypes take.
func addr(p libcuda.Deviceptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// plan returns the plan for k, making it on first use: the descriptors,
// the layouts, and the algorithm of rank k.op.Algo among the heuristic's
// answers.
func (st *state) plan(k key) (*plan, error) {
	if p := st.last.Load(); p != nil && p.k == k {
		return p, nil
	}
	st.plansMu.Lock()
	defer st.plansMu.Unlock()
	if p := st.plans[k]; p != nil {
		st.last.Store(p)
		return p, nil
	}
	p := &plan{k: k}
	err := st.life.Do(func() error {
		if err := p.make(st.raw, k); err != nil {
			return errors.Join(err, p.destroy())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.plans[k] = p
	st.last.Store(p)
	return p, nil
}

// set sets one attribute of a descriptor from v.
func set[V any](desc MatmulDesc, attr MatmulDescAttributes, v V) error {
	if err := MatmulDescSetAttribute(desc, attr, unsafe.Pointer(&v), uint64(unsafe.Sizeof(v))); err != nil {
		return dl.Failed("cublaslt", fmt.Sprintf("cublasLtMatmulDescSetAttribute(%v)", attr), err)
	}
	return nil
}

// make creates the plan's descriptors and asks the heuristic; the context
// is current.
func (p *plan) make(h Handle, k key) error {
	op := k.op
	scale, _ := cublas.ScaleType(op.Compute)
	if err := MatmulDescCreate(&p.desc, op.Compute, scale); err != nil {
		return dl.Failed("cublaslt", "cublasLtMatmulDescCreate", err)
	}
	for _, a := range []struct {
		attr MatmulDescAttributes
		v    int32
	}{{CUBLASLT_MATMUL_DESC_TRANSA, int32(op.TransA)}, {CUBLASLT_MATMUL_DESC_TRANSB, int32(op.TransB)}, {CUBLASLT_MATMUL_DESC_EPILOGUE, int32(op.Epilogue)}} {
		if err := set(p.desc, a.attr, a.v); err != nil {
			return err
		}
	}
	if err := p.setExtras(k); err != nil {
		return err
	}
	ra, ca := stored(op.TransA, op.M, op.K)
	rb, cb := stored(op.TransB, op.K, op.N)
	for _, l := range []struct {
		out        *MatrixLayout
		t          libtypes.DataType
		rows, cols int
		ld, stride int
	}{{&p.a, k.t.A, ra, ca, op.LDA, op.StrideA}, {&p.b, k.t.B, rb, cb, op.LDB, op.StrideB},
		{&p.c, k.t.C, op.M, op.N, op.LDC, op.StrideC}, {&p.d, k.t.D, op.M, op.N, op.LDC, op.StrideC}} {
		if l.out == &p.d && k.t.D == k.t.C {
			p.d = p.c // C's layout is D's: one descriptor for both
			break
		}
		if err := layout(l.out, l.t, l.rows, l.cols, l.ld, l.stride, op); err != nil {
			return err
		}
	}
	answers, err := heuristic(h, p.desc, p.a, p.b, p.c, p.d, k.ws)
	if err != nil {
		if errors.Is(err, cublas.CUBLAS_STATUS_NOT_SUPPORTED) {
			// Name what cuBLASLt refused: an epilogue it has no kernel for
			// with these types, transposes or compute type.
			return fmt.Errorf("%w (epilogue %v, transposes %v %v, compute %v, types A %v B %v C %v D %v bias %v aux %v)",
				err, op.Epilogue, op.TransA, op.TransB, op.Compute, k.t.A, k.t.B, k.t.C, k.t.D, k.t.Bias, k.t.Aux)
		}
		return err
	}
	if len(answers) == 0 {
		return fmt.Errorf("cublaslt: cublasLtMatmulAlgoGetHeuristic found no algorithm for %+v: %w", op, cublas.CUBLAS_STATUS_NOT_SUPPORTED)
	}
	if op.Algo >= len(answers) {
		return fmt.Errorf("cublaslt: Op.Algo is %d; the heuristic gave %d algorithms for %+v: %w", op.Algo, len(answers), op, ErrShape)
	}
	p.algos = answers
	p.algo, p.wsSize = answers[op.Algo], answers[op.Algo].WorkspaceSize
	return nil
}

// setExtras sets the descriptor's attributes beyond the transposes and
// the epilogue: the bias and aux types and the aux layout, FAST_ACCUM.
func (p *plan) setExtras(k key) error {
	op := k.op
	e := epilogues[op.Epilogue]
	if e.bias || e.biasOut {
		if err := set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32(k.t.Bias)); err != nil {
			return err
		}
	}
	if e.aux || e.mask {
		if e.aux {
			if err := set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, int32(k.t.Aux)); err != nil {
				return err
			}
		}
		if err := set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64(op.AuxLD)); err != nil {
			return err
		}
		if op.Batch > 1 {
			if err := set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, int64(op.AuxStride)); err != nil {
				return err
			}
		}
	}
	if op.FastAccum {
		if err := set(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8(1)); err != nil {
			return err
		}
	}
	return nil
}

// layout creates a matrix layout of rows x cols as op orders it, with
// op's batch.
func layout(out *MatrixLayout, t libtypes.DataType, rows, cols, ld, stride int, op Op) error {
	if err := MatrixLayoutCreate(out, t, uint64(rows), uint64(cols), int64(ld)); err != nil {
		return dl.Failed("cublaslt", "cublasLtMatrixLayoutCreate", err)
	}
	if op.RowMajor {
		order := int32(CUBLASLT_ORDER_ROW)
		if err := MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_ORDER, unsafe.Pointer(&order), 4); err != nil {
			return dl.Failed("cublaslt", "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_ORDER)", err)
		}
	}
	if op.Batch > 1 {
		count, off := int32(op.Batch), int64(stride)
		if err := MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, unsafe.Pointer(&count), 4); err != nil {
			return dl.Failed("cublaslt", "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)", err)
		}
		if err := MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, unsafe.Pointer(&off), 8); err != nil {
			return dl.Failed("cublaslt", "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)", err)
		}
	}
	return nil
}

// heuristic asks for up to MaxAlgos algorithms within a workspace of ws
// bytes, ranked.
func heuristic(h Handle, desc MatmulDesc, a, b, c, d MatrixLayout, ws int) ([]Algo, error) {
	var pref MatmulPreference
	if err := MatmulPreferenceCreate(&pref); err != nil {
		return nil, dl.Failed("cublaslt", "cublasLtMatmulPreferenceCreate", err)
	}
	defer func() {
		if err := MatmulPreferenceDestroy(pref); err != nil {
			slog.Error("cublaslt: cublasLtMatmulPreferenceDestroy", "err", err)
		}
	}()
	limit := uint64(ws)
	if err := MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, unsafe.Pointer(&limit), 8); err != nil {
		return nil, dl.Failed("cublaslt", "cublasLtMatmulPreferenceSetAttribute", err)
	}
	var res [MaxAlgos]MatmulHeuristicResult
	var got int32
	if err := MatmulAlgoGetHeuristic(h, desc, a, b, c, d, pref, MaxAlgos, &res[0], &got); err != nil {
		return nil, dl.Failed("cublaslt", "cublasLtMatmulAlgoGetHeuristic", err)
	}
	out := make([]Algo, 0, got)
	for i, r := range res[:min(int(got), MaxAlgos)] {
		if r.State != cublas.CUBLAS_STATUS_SUCCESS {
			continue
		}
		out = append(out, Algo{Rank: i, Algo: r.Algo, WorkspaceSize: r.WorkspaceSize, Waves: r.WavesCount})
	}
	for i := range out {
		out[i].Rank = i
	}
	return out, nil
}

// Algorithms is the heuristic's answers for a matmul of op on operands of
// types t (TypesOf gives them; the scale pointers not given), within the
// Lt's workspace: up to MaxAlgos, best first, each with its rank, which
// Op.Algo takes to select it. It makes (or finds) the plan of op with
// Algo 0, and so asks the heuristic at most once per such plan.
func (lt *Lt) Algorithms(op Op, t Types) ([]Algo, error) {
	p, err := lt.planFor("Algorithms", op, t)
	if err != nil {
		return nil, err
	}
	return append([]Algo(nil), p.algos...), nil
}

// Chosen is the algorithm a Matmul or MatmulEx of op on operands of types
// t (without scale pointers) runs: the plan's, made if it is not yet.
func (lt *Lt) Chosen(op Op, t Types) (Algo, error) {
	p, err := lt.planFor("Chosen", op, t)
	if err != nil {
		return Algo{}, err
	}
	return p.algo, nil
}

// planFor finds or makes the plan of op and t.
func (lt *Lt) planFor(call string, op Op, t Types) (*plan, error) {
	op = op.normalized()
	if op.Algo < 0 || op.Algo >= MaxAlgos {
		return nil, shapeErr(call, "Algo", int64(op.Algo), "Algo is %d, not a rank among the heuristic's %d answers", op.Algo, MaxAlgos)
	}
	if _, ok := epilogues[op.Epilogue]; !ok {
		return nil, shapeErr(call, "Epilogue", int64(op.Epilogue), "epilogue %v is not one %s takes", op.Epilogue, call)
	}
	e := epilogues[op.Epilogue]
	if !e.bias && !e.biasOut {
		t.Bias = t.D
	}
	if !e.aux {
		t.Aux = t.D
	}
	st, err := lt.acquire(call)
	if err != nil {
		return nil, err
	}
	defer st.life.Release()
	return st.plan(key{op: op, t: t, ws: st.ws.Len()})
}
