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

// ErrShape is package cublas's: Matmul's shape errors match it.
var ErrShape = cublas.ErrShape

// Op describes a multiplication for Matmul,
//
//	D = epilogue(alpha*op(A)*op(B) + beta*C + bias)
//
// on column-major matrices (see package cublas): op(A) is M x K, op(B)
// K x N, C and D are M x N. It is what cuBLASLt's operation descriptor,
// matrix layouts and preference say, in Go form; an Lt keeps one plan per
// Op (and element types and workspace size), made with one call of the
// heuristic (cublasLtMatmulAlgoGetHeuristic).
type Op struct {
	TransA, TransB cublas.Operation   // NoTrans (the zero value) or Trans
	M, N, K        int                // the sizes
	LDA, LDB, LDC  int                // leading dimensions; 0: the stored matrix's rows (C's are D's)
	Compute        cublas.ComputeType // the arithmetic; 0: CUBLAS_COMPUTE_32F
	// Epilogue is what is applied to the result: 0 or
	// CUBLASLT_EPILOGUE_DEFAULT nothing, CUBLASLT_EPILOGUE_RELU,
	// CUBLASLT_EPILOGUE_GELU, and their _BIAS forms (CUBLASLT_EPILOGUE_BIAS,
	// _RELU_BIAS, _GELU_BIAS), which add a bias vector of M elements,
	// broadcast over the columns, before the activation.
	Epilogue Epilogue
}

// key is what a plan is made for.
type key struct {
	op     Op
	ab, cd libtypes.DataType
	ws     int
}

// hasBias reports whether the epilogue adds a bias vector.
func (op Op) hasBias() bool { return op.Epilogue&CUBLASLT_EPILOGUE_BIAS != 0 }

// normalized fills Op's defaults.
func (op Op) normalized() Op {
	ra, _ := stored(op.TransA, op.M, op.K)
	rb, _ := stored(op.TransB, op.K, op.N)
	if op.LDA == 0 {
		op.LDA = max(1, ra)
	}
	if op.LDB == 0 {
		op.LDB = max(1, rb)
	}
	if op.LDC == 0 {
		op.LDC = max(1, op.M)
	}
	if op.Compute == 0 {
		op.Compute = cublas.CUBLAS_COMPUTE_32F
	}
	if op.Epilogue == 0 {
		op.Epilogue = CUBLASLT_EPILOGUE_DEFAULT
	}
	return op
}

func stored(t cublas.Operation, rows, cols int) (int, int) {
	if t == cublas.NoTrans {
		return rows, cols
	}
	return cols, rows
}

// plan is an Op's descriptors and algorithm.
type plan struct {
	k      key
	mu     gosync.Mutex // serializes the bias pointer's setting and the call that uses it
	desc   MatmulDesc
	a, b   MatrixLayout
	c      MatrixLayout // C's and D's
	algo   MatmulAlgo
	wsSize uint64
	bias   libcuda.Deviceptr // the bias pointer set on desc
}

// destroy destroys the plan's descriptors; the context must be current.
func (p *plan) destroy() error {
	var errs []error
	if p.desc != 0 {
		errs = append(errs, MatmulDescDestroy(p.desc))
	}
	for _, l := range []MatrixLayout{p.a, p.b, p.c} {
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
// with float32, cuda.Half or cuda.BFloat16 inputs with float32 or their
// own type as output, ...). D may be C. C may be the zero Slice when beta
// is 0; bias is needed by the _BIAS epilogues only. alpha and beta are in
// the compute type's scale type (cublas.ScaleType). Sizes, leading
// dimensions and lengths are checked first (ErrShape, naming the
// argument); A, B, C and bias are recorded as read by the stream, D as
// written.
func Matmul[T, TC cublas.Elem](lt *Lt, op Op, alpha float64, a, b cuda.Slice[T], beta float64, c, d, bias cuda.Slice[TC]) error {
	const call = "Matmul"
	op = op.normalized()
	if err := check(call, op, a.Len(), b.Len(), c.Len(), d.Len(), bias.Len(), beta); err != nil {
		return err
	}
	al, err := cublas.ScalarOf(op.Compute, alpha)
	if err != nil {
		return fmt.Errorf("cublaslt: Matmul: %w", err)
	}
	be, _ := cublas.ScalarOf(op.Compute, beta)
	if c.Len() == 0 {
		c = d // beta is 0: C is not read
	}
	st, err := lt.acquire(call)
	if err != nil {
		return err
	}
	defer st.life.Release()
	k := key{op: op, ab: cublas.DataTypeOf[T](), cd: cublas.DataTypeOf[TC](), ws: st.ws.Len()}
	p, err := st.plan(k)
	if err != nil {
		return err
	}
	ops := [6]cuda.Operand{a.Operand(cuda.Read), b.Operand(cuda.Read), c.Operand(cuda.Read), d.Operand(cuda.Write)}
	n := 4
	if op.hasBias() {
		ops[n] = bias.Operand(cuda.Read)
		n++
	}
	wsAt := -1
	if st.ws.Len() > 0 {
		ops[n] = st.ws.Operand(cuda.ReadWrite)
		wsAt = n
		n++
	}
	return st.life.Stream().Do("cublasLtMatmul", ops[:n], func(raw libcuda.Stream) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if op.hasBias() && p.bias != ops[4].Ptr() {
			bp := ops[4].Ptr()
			if err := MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, unsafe.Pointer(&bp), uint64(unsafe.Sizeof(bp))); err != nil {
				return dl.Failed("cublaslt", "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER)", err)
			}
			p.bias = bp
		}
		var ws unsafe.Pointer
		if wsAt >= 0 {
			ws = addr(ops[wsAt].Ptr())
		}
		err := RawMatmul(st.raw, p.desc, unsafe.Pointer(&al), addr(ops[0].Ptr()), p.a, addr(ops[1].Ptr()), p.b,
			unsafe.Pointer(&be), addr(ops[2].Ptr()), p.c, addr(ops[3].Ptr()), p.c, &p.algo, ws, p.wsSize, raw)
		if err != nil {
			return dl.Failed("cublaslt", "cublasLtMatmul", err)
		}
		return nil
	})
}

// check checks an Op against the Slices' lengths.
func check(call string, op Op, la, lb, lc, ld, lbias int, beta float64) error {
	for _, t := range []struct {
		name string
		op   cublas.Operation
	}{{"TransA", op.TransA}, {"TransB", op.TransB}} {
		if t.op != cublas.NoTrans && t.op != cublas.Trans {
			return fmt.Errorf("cublaslt: %s: %s is %v: %w", call, t.name, t.op, ErrShape)
		}
	}
	switch op.Epilogue {
	case CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_GELU,
		CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS:
	default:
		return fmt.Errorf("cublaslt: %s: epilogue %v is not one Matmul takes: %w", call, op.Epilogue, ErrShape)
	}
	ra, ca := stored(op.TransA, op.M, op.K)
	if err := cublas.CheckMatrix(call, "A", ra, ca, op.LDA, la); err != nil {
		return err
	}
	rb, cb := stored(op.TransB, op.K, op.N)
	if err := cublas.CheckMatrix(call, "B", rb, cb, op.LDB, lb); err != nil {
		return err
	}
	if err := cublas.CheckMatrix(call, "D", op.M, op.N, op.LDC, ld); err != nil {
		return err
	}
	if lc > 0 || beta != 0 {
		if err := cublas.CheckMatrix(call, "C", op.M, op.N, op.LDC, lc); err != nil {
			return err
		}
	}
	if op.hasBias() && lbias < op.M {
		return fmt.Errorf("cublaslt: %s: bias has %d elements, the epilogue %v needs M = %d: %w", call, lbias, op.Epilogue, op.M, ErrShape)
	}
	if op.M == 0 || op.N == 0 || op.K == 0 {
		return fmt.Errorf("cublaslt: %s: M, N and K must be positive (%d, %d, %d): %w", call, op.M, op.N, op.K, ErrShape)
	}
	return nil
}

// addr is a device address as the void * cuBLASLt's prototypes take.
func addr(p libcuda.Deviceptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// plan returns the plan for k, making it on first use: the descriptors,
// the layouts, and the algorithm the heuristic ranks first.
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
		v := a.v
		if err := MatmulDescSetAttribute(p.desc, a.attr, unsafe.Pointer(&v), 4); err != nil {
			return dl.Failed("cublaslt", fmt.Sprintf("cublasLtMatmulDescSetAttribute(%v)", a.attr), err)
		}
	}
	ra, ca := stored(op.TransA, op.M, op.K)
	rb, cb := stored(op.TransB, op.K, op.N)
	for _, l := range []struct {
		out        *MatrixLayout
		t          libtypes.DataType
		rows, cols int
		ld         int
	}{{&p.a, k.ab, ra, ca, op.LDA}, {&p.b, k.ab, rb, cb, op.LDB}, {&p.c, k.cd, op.M, op.N, op.LDC}} {
		if err := MatrixLayoutCreate(l.out, l.t, uint64(l.rows), uint64(l.cols), int64(l.ld)); err != nil {
			return dl.Failed("cublaslt", "cublasLtMatrixLayoutCreate", err)
		}
	}
	var pref MatmulPreference
	if err := MatmulPreferenceCreate(&pref); err != nil {
		return dl.Failed("cublaslt", "cublasLtMatmulPreferenceCreate", err)
	}
	defer func() {
		if err := MatmulPreferenceDestroy(pref); err != nil {
			slog.Error("cublaslt: cublasLtMatmulPreferenceDestroy", "err", err)
		}
	}()
	ws := uint64(k.ws)
	if err := MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, unsafe.Pointer(&ws), 8); err != nil {
		return dl.Failed("cublaslt", "cublasLtMatmulPreferenceSetAttribute", err)
	}
	var res MatmulHeuristicResult
	var got int32
	if err := MatmulAlgoGetHeuristic(h, p.desc, p.a, p.b, p.c, p.c, pref, 1, &res, &got); err != nil {
		return dl.Failed("cublaslt", "cublasLtMatmulAlgoGetHeuristic", err)
	}
	if got == 0 {
		return fmt.Errorf("cublaslt: cublasLtMatmulAlgoGetHeuristic found no algorithm for %+v: %w", op, cublas.CUBLAS_STATUS_NOT_SUPPORTED)
	}
	p.algo, p.wsSize = res.Algo, res.WorkspaceSize
	return nil
}
