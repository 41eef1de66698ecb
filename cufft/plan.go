package cufft

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/handle"
	"github.com/purecuda/purecuda/libcuda"
)

// ErrShape is matched (errors.Is) by the errors of a shape, layout or
// length that does not fit the plan, found before any call into cuFFT.
var ErrShape = errors.New("cufft: shape does not fit")

// Direction is the sign of the exponent of a complex-to-complex transform.
type Direction int32

const (
	Forward Direction = CUFFT_FORWARD // e^(-2πi jk/n): cuFFT's forward transform
	Inverse Direction = CUFFT_INVERSE // e^(+2πi jk/n), not divided by n
)

// Layout is cuFFT's advanced data layout (cufftPlanMany) of one side of a
// transform: element (x0, ..., x[r-1]) of transform b is at
//
//	b*Dist + Stride*(x[r-1] + Embed[r-1]*(x[r-2] + Embed[r-2]*(... + Embed[1]*x0)))
//
// (Embed[0] is not used; Embed[d] must be at least the transform's extent
// in dimension d on that side). The zero Layout is the basic one: the
// transforms packed one after the other.
type Layout struct {
	Embed        []int
	Stride, Dist int
}

// Shape is what a plan transforms: rank 1, 2 or 3 sizes (the slowest
// dimension first, as in C), Batch transforms of them (1 when 0), and the
// layouts of the input and the output (both zero, or both given).
type Shape struct {
	N       []int
	Batch   int
	In, Out Layout
}

// Plan is a cuFFT plan bound to a stream, with its work area allocated
// from package cuda's stream-ordered memory (cufftSetAutoAllocation off,
// cufftSetWorkArea), so that an execution can be captured into a graph and
// the graph launched many times.
//
// cuFFT lets a plan be executed by one thread at a time (its work area is
// shared by its executions): a Plan's executions hold it exclusively, so a
// Plan is safe for concurrent use, its executions one after the other on
// its stream. Transforms that should run side by side need a Plan each,
// on streams of their own. A Plan dropped without Close is destroyed by
// the garbage collector, and a warning is logged.
type Plan struct {
	st      *planState
	cleanup runtime.Cleanup
}

type planState struct {
	life    *handle.Life
	raw     Handle
	kind    Type
	n       []int64
	batch   int64
	in, out Layout
	ws      cuda.Slice[byte]
}

// kindInfo describes a kind: whether it is one, its precision, and which
// side is real.
func kindInfo(t Type) (ok, double, realIn, realOut bool) {
	switch t {
	case CUFFT_C2C:
		return true, false, false, false
	case CUFFT_R2C:
		return true, false, true, false
	case CUFFT_C2R:
		return true, false, false, true
	case CUFFT_Z2Z:
		return true, true, false, false
	case CUFFT_D2Z:
		return true, true, true, false
	case CUFFT_Z2D:
		return true, true, false, true
	}
	return false, false, false, false
}

// NewPlan makes a plan of the given kind (CUFFT_C2C, _R2C, _C2R, _Z2Z,
// _D2Z, _Z2D) for shape, bound to the stream: cufftCreate,
// cufftSetAutoAllocation(0), cufftMakePlanMany64 (64-bit sizes), a work
// area of the size cuFFT asks from cuda.Alloc on s, cufftSetWorkArea and
// cufftSetStream. The shape is checked first (ErrShape). Make plans
// before a capture begins.
func NewPlan(s *cuda.Stream, kind Type, shape Shape) (*Plan, error) {
	st, err := newState(kind, shape)
	if err != nil {
		return nil, err
	}
	var n, inembed, onembed [3]int64
	copy(n[:], st.n)
	advanced := st.in.Embed != nil
	for d := range st.n {
		if advanced {
			inembed[d], onembed[d] = int64(st.in.Embed[d]), int64(st.out.Embed[d])
		}
	}
	var size uint64
	life, err := handle.Open(s, "cufft", "cufftMakePlanMany64", func(raw libcuda.Stream) error {
		if err := RawCreate(&st.raw); err != nil {
			return callErr("cufftCreate", err)
		}
		err := SetAutoAllocation(st.raw, 0)
		if err == nil {
			var pin, pon *int64
			if advanced {
				pin, pon = &inembed[0], &onembed[0]
			}
			err = callErr("cufftMakePlanMany64", MakePlanMany64(st.raw, int32(len(st.n)), &n[0], pin, int64(st.in.Stride), int64(st.in.Dist),
				pon, int64(st.out.Stride), int64(st.out.Dist), kind, st.batch, &size))
		} else {
			err = callErr("cufftSetAutoAllocation", err)
		}
		if err == nil {
			err = callErr("cufftSetStream", SetStream(st.raw, raw))
		}
		if err != nil {
			if derr := Destroy(st.raw); derr != nil {
				slog.Error("cufft: destroying a plan that could not be made", "err", derr)
			}
		}
		return err
	}, func() error { return callErr("cufftDestroy", Destroy(st.raw)) })
	if err != nil {
		return nil, err
	}
	st.life = life
	p := &Plan{st: st}
	p.cleanup = runtime.AddCleanup(p, func(st *planState) {
		st.life.Collected("Plan")
		freeWorkArea(st.ws)
	}, st)
	if size > 0 {
		if st.ws, err = cuda.Alloc[byte](s, int(size)); err != nil {
			return nil, errors.Join(fmt.Errorf("cufft: NewPlan: the work area of %d bytes: %w", size, err), p.Close())
		}
		ops := [1]cuda.Operand{st.ws.Operand(cuda.ReadWrite)}
		err = s.Do("cufftSetWorkArea", ops[:], func(libcuda.Stream) error {
			return callErr("cufftSetWorkArea", SetWorkArea(st.raw, unsafe.Pointer(devPtr[byte](ops[0].Ptr()))))
		})
		if err != nil {
			return nil, errors.Join(err, p.Close())
		}
	}
	return p, nil
}

// newState checks kind and shape and keeps them.
func newState(kind Type, shape Shape) (*planState, error) {
	ok, _, realIn, realOut := kindInfo(kind)
	if !ok {
		return nil, fmt.Errorf("cufft: NewPlan: kind %v: %w", kind, CUFFT_INVALID_TYPE)
	}
	r := len(shape.N)
	if r < 1 || r > 3 {
		return nil, fmt.Errorf("cufft: NewPlan: %d dimensions, want 1 to 3: %w", r, ErrShape)
	}
	st := &planState{kind: kind, batch: int64(shape.Batch), in: shape.In, out: shape.Out}
	// The plan keeps its own copies: the caller may change its slices.
	st.in.Embed, st.out.Embed = slices.Clone(shape.In.Embed), slices.Clone(shape.Out.Embed)
	if st.batch == 0 {
		st.batch = 1
	}
	if st.batch < 0 {
		return nil, fmt.Errorf("cufft: NewPlan: batch %d: %w", shape.Batch, ErrShape)
	}
	for d, v := range shape.N {
		if v < 1 {
			return nil, fmt.Errorf("cufft: NewPlan: N[%d] is %d, want at least 1: %w", d, v, ErrShape)
		}
		st.n = append(st.n, int64(v))
	}
	if (shape.In.Embed == nil) != (shape.Out.Embed == nil) {
		return nil, fmt.Errorf("cufft: NewPlan: In.Embed and Out.Embed must both be given or both nil: %w", ErrShape)
	}
	if shape.In.Embed == nil {
		if shape.In.Stride != 0 || shape.In.Dist != 0 || shape.Out.Stride != 0 || shape.Out.Dist != 0 {
			return nil, fmt.Errorf("cufft: NewPlan: a stride or distance without Embed (the basic layout has none): %w", ErrShape)
		}
		return st, nil
	}
	for _, side := range []struct {
		name string
		l    Layout
		m    [3]int64
	}{{"In", shape.In, st.dims(realOut)}, {"Out", shape.Out, st.dims(realIn)}} {
		if len(side.l.Embed) != r {
			return nil, fmt.Errorf("cufft: NewPlan: %s.Embed has %d sizes for %d dimensions: %w", side.name, len(side.l.Embed), r, ErrShape)
		}
		for d := 1; d < r; d++ {
			if int64(side.l.Embed[d]) < side.m[d] {
				return nil, fmt.Errorf("cufft: NewPlan: %s.Embed[%d] is %d, below the transform's %d: %w", side.name, d, side.l.Embed[d], side.m[d], ErrShape)
			}
		}
		if side.l.Stride < 1 || side.l.Dist < 1 {
			return nil, fmt.Errorf("cufft: NewPlan: %s.Stride %d and %s.Dist %d must be at least 1: %w", side.name, side.l.Stride, side.name, side.l.Dist, ErrShape)
		}
	}
	return st, nil
}

// dims are the logical extents of a side: the complex side of a real
// transform (half is true) has n/2+1 elements in its last dimension.
// It returns an array (rank at most 3) so that an execution allocates
// nothing; the extents are its first len(st.n).
func (st *planState) dims(half bool) [3]int64 {
	var m [3]int64
	copy(m[:], st.n)
	if r := len(st.n); half {
		m[r-1] = m[r-1]/2 + 1
	}
	return m
}

// need is the number of elements a side's Slice must hold: the dense size
// of its batch of transforms in the basic layout (with rows of padded
// to pad elements, when pad > 0), else the last element's index + 1.
func (st *planState) need(l Layout, m []int64, pad int64) int64 {
	if l.Embed == nil {
		n := st.batch
		for d, v := range m {
			if d == len(m)-1 && pad > 0 {
				v = pad
			}
			n *= v
		}
		return n
	}
	var idx int64
	for d, v := range m {
		if d > 0 {
			idx *= int64(l.Embed[d])
		}
		idx += v - 1
	}
	return (st.batch-1)*int64(l.Dist) + int64(l.Stride)*idx + 1
}

func (st *planState) String() string {
	s := make([]string, len(st.n))
	for i, v := range st.n {
		s[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("%s %v, batch %d", strings.Join(s, "x"), st.kind, st.batch)
}

// callErr names the C function of a failed call (dl.Failed); a
// *SymbolError or a *LoadError names it already and comes back as it is.
func callErr(call string, err error) error {
	if err == nil {
		return nil
	}
	var se *SymbolError
	var le *LoadError
	if errors.As(err, &se) || errors.As(err, &le) {
		return err
	}
	return dl.Failed("cufft", call, err)
}

//go:noinline
func nilPlan(op string) error { return fmt.Errorf("cufft: %s on a nil Plan: %w", op, cuda.ErrNil) }

// Kind is the plan's transform kind.
func (p *Plan) Kind() Type {
	if p == nil || p.st == nil {
		return 0
	}
	return p.st.kind
}

// WorkArea is the plan's work area (a zero Slice when cuFFT needs none).
func (p *Plan) WorkArea() cuda.Slice[byte] {
	if p == nil || p.st == nil {
		return cuda.Slice[byte]{}
	}
	return p.st.ws
}

// Raw is the cuFFT handle, for calls through the generated functions
// (which must run with the stream's context current). Do not destroy it.
func (p *Plan) Raw() Handle {
	if p == nil || p.st == nil {
		return -1
	}
	return p.st.raw
}

// Stream is the stream the plan's executions go to.
func (p *Plan) Stream() *cuda.Stream {
	if p == nil || p.st == nil {
		return nil
	}
	if p.st.life.Acquire("Stream") != nil {
		return nil
	}
	defer p.st.life.Release()
	return p.st.life.Stream()
}

// SetStream binds the plan to another stream of the same context
// (cufftSetStream), once the executions in progress have returned. The
// work area goes with it: package cuda orders its use on the new stream
// after its uses on the old one.
func (p *Plan) SetStream(s *cuda.Stream) error {
	if p == nil || p.st == nil {
		return nilPlan("SetStream")
	}
	st := p.st
	if err := st.life.Lock("SetStream"); err != nil {
		return err
	}
	defer st.life.Unlock()
	var ops [1]cuda.Operand
	n := 0
	if st.ws.Len() > 0 {
		ops[0], n = st.ws.Operand(cuda.ReadWrite), 1
	}
	err := s.Do("cufftSetStream", ops[:n], func(raw libcuda.Stream) error {
		return callErr("cufftSetStream", SetStream(st.raw, raw))
	})
	if err != nil {
		return err
	}
	st.life.SetStream(s)
	return nil
}

// Close destroys the plan (cufftDestroy) once the executions in progress
// have returned, and frees its work area after the work that used it.
// The destroy is handed to sync.Postpone, so it waits for captures in
// progress. Closing twice, and any use after Close, is an error matching
// cuda.ErrClosed.
func (p *Plan) Close() error {
	if p == nil || p.st == nil {
		return nilPlan("Close")
	}
	st := p.st
	var ws cuda.Slice[byte]
	if err := st.life.Close(func() { ws, st.ws = st.ws, cuda.Slice[byte]{} }); err != nil {
		return err
	}
	p.cleanup.Stop()
	freeWorkArea(ws)
	return nil
}

// freeWorkArea frees a work area; Free waits for the work recorded on it.
func freeWorkArea(ws cuda.Slice[byte]) {
	if ws.Len() == 0 {
		return
	}
	if err := ws.Free(); err != nil && !errors.Is(err, cuda.ErrFreed) {
		slog.Error("cufft: freeing a plan's work area", "err", err)
	}
}

// exec checks the kind and the lengths, and submits f with in and out
// (one operand when in place) and the work area.
func (p *Plan) exec(op, call string, kind Type, in, out cuda.Operand, inLen, outLen int, inPlace bool, f func(raw Handle, in, out libcuda.Deviceptr) error) error {
	if p == nil || p.st == nil {
		return nilPlan(op)
	}
	st := p.st
	if err := st.life.Lock(op); err != nil {
		return err
	}
	defer st.life.Unlock()
	if st.kind != kind {
		return fmt.Errorf("cufft: %s on a %v plan: %w", op, st.kind, CUFFT_INVALID_TYPE)
	}
	_, _, realIn, realOut := kindInfo(kind)
	r := len(st.n)
	dIn, dOut := st.dims(realOut), st.dims(realIn)
	mIn, mOut := dIn[:r], dOut[:r]
	var needIn, needOut int64
	if inPlace {
		// One complex Slice: the real side's rows are padded to twice the
		// complex side's in the basic layout, and counted in complex
		// elements (two reals each).
		switch {
		case realIn:
			needIn = (st.need(st.in, mIn, 2*mOut[len(mOut)-1]) + 1) / 2
			needOut = st.need(st.out, mOut, 0)
		case realOut:
			needIn = st.need(st.in, mIn, 0)
			needOut = (st.need(st.out, mOut, 2*mIn[len(mIn)-1]) + 1) / 2
		default:
			needIn, needOut = st.need(st.in, mIn, 0), st.need(st.out, mOut, 0)
		}
		if need := max(needIn, needOut); int64(inLen) < need {
			return fmt.Errorf("cufft: %s: x has %d elements; the plan (%v) transforms %d in place: %w", op, inLen, st, need, ErrShape)
		}
	} else {
		needIn, needOut = st.need(st.in, mIn, 0), st.need(st.out, mOut, 0)
		if int64(inLen) < needIn {
			return fmt.Errorf("cufft: %s: in has %d elements; the plan (%v) reads %d: %w", op, inLen, st, needIn, ErrShape)
		}
		if int64(outLen) < needOut {
			return fmt.Errorf("cufft: %s: out has %d elements; the plan (%v) writes %d: %w", op, outLen, st, needOut, ErrShape)
		}
	}
	ops := [3]cuda.Operand{in, out}
	n := 2
	if inPlace {
		n = 1
	}
	if st.ws.Len() > 0 {
		ops[n] = st.ws.Operand(cuda.ReadWrite)
		n++
	}
	return st.life.Stream().Do(call, ops[:n], func(libcuda.Stream) error {
		pi, po := ops[0].Ptr(), ops[0].Ptr()
		if !inPlace {
			po = ops[1].Ptr()
		}
		return callErr(call, f(st.raw, pi, po))
	})
}

func checkDir(op string, dir Direction) error {
	if dir != Forward && dir != Inverse {
		return fmt.Errorf("cufft: %s: direction %d, want Forward or Inverse: %w", op, dir, CUFFT_INVALID_VALUE)
	}
	return nil
}

// C2C transforms in to out (cufftExecC2C) in the given direction; in and
// out may be the same Slice (in place), and must not overlap otherwise.
func (p *Plan) C2C(in, out cuda.Slice[complex64], dir Direction) error {
	if err := checkDir("C2C", dir); err != nil {
		return err
	}
	inPlace := in == out
	return p.exec("C2C", "cufftExecC2C", CUFFT_C2C, in.Operand(cuda.ReadWrite), out.Operand(cuda.ReadWrite), in.Len(), out.Len(), inPlace,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecC2C(raw, devPtr[Complex](i), devPtr[Complex](o), int32(dir))
		})
}

// Z2Z is C2C in double precision (cufftExecZ2Z).
func (p *Plan) Z2Z(in, out cuda.Slice[complex128], dir Direction) error {
	if err := checkDir("Z2Z", dir); err != nil {
		return err
	}
	inPlace := in == out
	return p.exec("Z2Z", "cufftExecZ2Z", CUFFT_Z2Z, in.Operand(cuda.ReadWrite), out.Operand(cuda.ReadWrite), in.Len(), out.Len(), inPlace,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecZ2Z(raw, devPtr[DoubleComplex](i), devPtr[DoubleComplex](o), int32(dir))
		})
}

// R2C transforms real in to its half spectrum out, n/2+1 complex numbers
// per row of the last dimension (cufftExecR2C, forward). cuFFT may
// overwrite in.
func (p *Plan) R2C(in cuda.Slice[float32], out cuda.Slice[complex64]) error {
	return p.exec("R2C", "cufftExecR2C", CUFFT_R2C, in.Operand(cuda.ReadWrite), out.Operand(cuda.Write), in.Len(), out.Len(), false,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecR2C(raw, devPtr[Real](i), devPtr[Complex](o))
		})
}

// C2R transforms a half spectrum in to real out (cufftExecC2R, inverse,
// not divided by the size). cuFFT overwrites in.
func (p *Plan) C2R(in cuda.Slice[complex64], out cuda.Slice[float32]) error {
	return p.exec("C2R", "cufftExecC2R", CUFFT_C2R, in.Operand(cuda.ReadWrite), out.Operand(cuda.Write), in.Len(), out.Len(), false,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecC2R(raw, devPtr[Complex](i), devPtr[Real](o))
		})
}

// D2Z is R2C in double precision (cufftExecD2Z).
func (p *Plan) D2Z(in cuda.Slice[float64], out cuda.Slice[complex128]) error {
	return p.exec("D2Z", "cufftExecD2Z", CUFFT_D2Z, in.Operand(cuda.ReadWrite), out.Operand(cuda.Write), in.Len(), out.Len(), false,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecD2Z(raw, devPtr[DoubleReal](i), devPtr[DoubleComplex](o))
		})
}

// Z2D is C2R in double precision (cufftExecZ2D).
func (p *Plan) Z2D(in cuda.Slice[complex128], out cuda.Slice[float64]) error {
	return p.exec("Z2D", "cufftExecZ2D", CUFFT_Z2D, in.Operand(cuda.ReadWrite), out.Operand(cuda.Write), in.Len(), out.Len(), false,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecZ2D(raw, devPtr[DoubleComplex](i), devPtr[DoubleReal](o))
		})
}

// R2CInPlace is R2C in place: x holds the real input, its rows padded to
// 2*(n/2+1) reals in the basic layout, and receives the half spectrum.
func (p *Plan) R2CInPlace(x cuda.Slice[complex64]) error {
	return p.exec("R2CInPlace", "cufftExecR2C", CUFFT_R2C, x.Operand(cuda.ReadWrite), cuda.Operand{}, x.Len(), x.Len(), true,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecR2C(raw, devPtr[Real](i), devPtr[Complex](o))
		})
}

// C2RInPlace is C2R in place: x holds the half spectrum and receives the
// real output, its rows padded to 2*(n/2+1) reals in the basic layout.
func (p *Plan) C2RInPlace(x cuda.Slice[complex64]) error {
	return p.exec("C2RInPlace", "cufftExecC2R", CUFFT_C2R, x.Operand(cuda.ReadWrite), cuda.Operand{}, x.Len(), x.Len(), true,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecC2R(raw, devPtr[Complex](i), devPtr[Real](o))
		})
}

// D2ZInPlace is R2CInPlace in double precision.
func (p *Plan) D2ZInPlace(x cuda.Slice[complex128]) error {
	return p.exec("D2ZInPlace", "cufftExecD2Z", CUFFT_D2Z, x.Operand(cuda.ReadWrite), cuda.Operand{}, x.Len(), x.Len(), true,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecD2Z(raw, devPtr[DoubleReal](i), devPtr[DoubleComplex](o))
		})
}

// Z2DInPlace is C2RInPlace in double precision.
func (p *Plan) Z2DInPlace(x cuda.Slice[complex128]) error {
	return p.exec("Z2DInPlace", "cufftExecZ2D", CUFFT_Z2D, x.Operand(cuda.ReadWrite), cuda.Operand{}, x.Len(), x.Len(), true,
		func(raw Handle, i, o libcuda.Deviceptr) error {
			return ExecZ2D(raw, devPtr[DoubleComplex](i), devPtr[DoubleReal](o))
		})
}

// devPtr is a device address as the *T that cuFFT's C prototypes take.
// The address is not Go memory; the garbage collector ignores it.
func devPtr[T any](p libcuda.Deviceptr) *T { return *(**T)(unsafe.Pointer(&p)) }
