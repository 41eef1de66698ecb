package curand

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/handle"
	"github.com/purecuda/purecuda/libcuda"
)

// Generator is a cuRAND generator on the device bound to a stream: every
// generate submits its work to that stream, in its context, on a locked OS
// thread, with the Slice it writes recorded as used by the stream (cuda's
// Stream.Do), so that the Slice's Free waits for the work.
//
// Its methods and the functions that take one are safe for concurrent use;
// the setters and Close wait for the generates in progress. The numbers
// come in the order the calls reach the stream. A Generator dropped
// without Close is destroyed by the garbage collector, and a warning is
// logged.
type Generator struct {
	st      *state
	cleanup runtime.Cleanup
}

// state is what the cleanup of a dropped Generator needs.
type state struct {
	life *handle.Life
	raw  Handle
	kind RngType
	dims uint32 // quasi-random dimensions (1 until SetDimensions); guarded by life's lock
	// ready: cuRAND has set up the generator's state (curandGenerateSeeds,
	// or a generate outside a capture) since its creation or the last
	// setter, so a generate allocates nothing and may be captured.
	ready atomic.Bool
}

// Pseudo reports whether kind is a pseudo-random generator (XORWOW,
// MRG32k3a, MTGP32, MT19937, Philox4x32-10), as against a quasi-random
// one (the Sobol kinds).
func Pseudo(kind RngType) bool { return kind >= 100 && kind < 200 }

// is64 reports whether kind makes 64-bit raw numbers (Sobol64 and its
// scrambled form).
func is64(kind RngType) bool {
	return kind == CURAND_RNG_QUASI_SOBOL64 || kind == CURAND_RNG_QUASI_SCRAMBLED_SOBOL64
}

// New creates a generator of the given kind (curandCreateGenerator) in
// the stream's context, bound to the stream (curandSetStream). The kinds:
// CURAND_RNG_PSEUDO_XORWOW (the default), _MRG32K3A, _MTGP32, _MT19937,
// _PHILOX4_32_10, and CURAND_RNG_QUASI_SOBOL32, _SCRAMBLED_SOBOL32,
// _SOBOL64, _SCRAMBLED_SOBOL64. Create generators before a capture
// begins: creation allocates device memory, and so does the setting up of
// the state at the first generate (see Prepare).
func New(s *cuda.Stream, kind RngType) (*Generator, error) {
	if err := checkKind("New", kind); err != nil {
		return nil, err
	}
	st := &state{kind: kind, dims: 1}
	life, err := handle.Open(s, "curand", "curandCreateGenerator", func(raw libcuda.Stream) error {
		if err := CreateGenerator(&st.raw, kind); err != nil {
			return callErr("curandCreateGenerator", err)
		}
		if err := SetStream(st.raw, raw); err != nil {
			if derr := DestroyGenerator(st.raw); derr != nil {
				slog.Error("curand: destroying a generator whose stream could not be set", "err", derr)
			}
			return callErr("curandSetStream", err)
		}
		return nil
	}, func() error { return callErr("curandDestroyGenerator", DestroyGenerator(st.raw)) })
	if err != nil {
		return nil, err
	}
	st.life = life
	g := &Generator{st: st}
	g.cleanup = runtime.AddCleanup(g, func(st *state) { st.life.Collected("Generator") }, st)
	return g, nil
}

// checkKind refuses a kind that is none of cuRAND's generators.
func checkKind(op string, kind RngType) error {
	switch kind {
	case CURAND_RNG_PSEUDO_DEFAULT, CURAND_RNG_PSEUDO_XORWOW, CURAND_RNG_PSEUDO_MRG32K3A,
		CURAND_RNG_PSEUDO_MTGP32, CURAND_RNG_PSEUDO_MT19937, CURAND_RNG_PSEUDO_PHILOX4_32_10,
		CURAND_RNG_QUASI_DEFAULT, CURAND_RNG_QUASI_SOBOL32, CURAND_RNG_QUASI_SCRAMBLED_SOBOL32,
		CURAND_RNG_QUASI_SOBOL64, CURAND_RNG_QUASI_SCRAMBLED_SOBOL64:
		return nil
	}
	return fmt.Errorf("curand: %s: kind %v: %w", op, kind, CURAND_STATUS_TYPE_ERROR)
}

// seedRule, orderingRule and dimensionsRule are the setters' rules.
func seedRule(kind RngType) error {
	if !Pseudo(kind) {
		return fmt.Errorf("a quasi-random generator (%v) has no seed: %w", kind, CURAND_STATUS_TYPE_ERROR)
	}
	return nil
}

func orderingRule(kind RngType, o Ordering) error {
	pseudoOrder := o >= CURAND_ORDERING_PSEUDO_BEST && o <= CURAND_ORDERING_PSEUDO_DYNAMIC
	if Pseudo(kind) != pseudoOrder || (!pseudoOrder && o != CURAND_ORDERING_QUASI_DEFAULT) {
		return fmt.Errorf("ordering %v for a %v generator: %w", o, kind, CURAND_STATUS_OUT_OF_RANGE)
	}
	return nil
}

func dimensionsRule(kind RngType, n uint32) error {
	if Pseudo(kind) {
		return fmt.Errorf("a pseudo-random generator (%v) has no dimensions: %w", kind, CURAND_STATUS_TYPE_ERROR)
	}
	if n < 1 || n > 20000 {
		return fmt.Errorf("dimensions %d, want 1 to 20000: %w", n, CURAND_STATUS_OUT_OF_RANGE)
	}
	return nil
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
	return dl.Failed("curand", call, err)
}

//go:noinline
func nilGenerator(op string) error {
	return fmt.Errorf("curand: %s on a nil Generator: %w", op, cuda.ErrNil)
}

func (g *Generator) acquire(op string) (*state, error) {
	if g == nil || g.st == nil {
		return nil, nilGenerator(op)
	}
	if err := g.st.life.Acquire(op); err != nil {
		return nil, err
	}
	return g.st, nil
}

func (g *Generator) lock(op string) (*state, error) {
	if g == nil || g.st == nil {
		return nil, nilGenerator(op)
	}
	if err := g.st.life.Lock(op); err != nil {
		return nil, err
	}
	return g.st, nil
}

// Kind is the generator's kind.
func (g *Generator) Kind() RngType {
	if g == nil || g.st == nil {
		return 0
	}
	return g.st.kind
}

// Raw is the cuRAND handle, for calls through the generated functions
// (which must run with the stream's context current: use the Stream's Do).
// Do not destroy it.
func (g *Generator) Raw() Handle {
	if g == nil || g.st == nil {
		return 0
	}
	return g.st.raw
}

// set runs a setter under the lock, in the stream's context.
func (g *Generator) set(op, call string, check func(st *state) error, f func(st *state) error) error {
	st, err := g.lock(op)
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	if check != nil {
		if err := check(st); err != nil {
			return fmt.Errorf("curand: %s: %w", op, err)
		}
	}
	return st.life.Stream().Do(call, nil, func(libcuda.Stream) error {
		if err := f(st); err != nil {
			return callErr(call, err)
		}
		// cuRAND sets the state up again at the next generate.
		st.ready.Store(false)
		return nil
	})
}

// Prepare sets up the generator's state on the device now
// (curandGenerateSeeds), which cuRAND otherwise does at the first generate
// after New, SetSeed, SetOffset, SetOrdering or SetDimensions, allocating
// device memory: what a stream capture forbids. Call it outside a capture
// (after the setters) before capturing a generate; a generate outside a
// capture prepares the generator itself.
func (g *Generator) Prepare() error {
	st, err := g.lock("Prepare")
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	return st.life.Stream().Do("curandGenerateSeeds", nil, func(raw libcuda.Stream) error {
		if capturing(raw) {
			return fmt.Errorf("curand: Prepare on a stream being captured: it allocates device memory; prepare before the capture: %w", cuda.ErrCapturing)
		}
		if err := GenerateSeeds(st.raw); err != nil {
			return callErr("curandGenerateSeeds", err)
		}
		st.ready.Store(true)
		return nil
	})
}

// capturing reports whether the stream is being captured; a failed query
// counts as capturing, so that nothing that allocates is tried.
func capturing(raw libcuda.Stream) bool {
	var status libcuda.StreamCaptureStatus
	if err := libcuda.StreamIsCapturing(raw, &status); err != nil {
		return true
	}
	return status != libcuda.CU_STREAM_CAPTURE_STATUS_NONE
}

// SetSeed sets the seed of a pseudo-random generator
// (curandSetPseudoRandomGeneratorSeed); a quasi-random one has none
// (CURAND_STATUS_TYPE_ERROR, before any call). The same kind, seed, offset
// and ordering give the same numbers.
func (g *Generator) SetSeed(seed uint64) error {
	return g.set("SetSeed", "curandSetPseudoRandomGeneratorSeed", func(st *state) error { return seedRule(st.kind) }, func(st *state) error { return SetPseudoRandomGeneratorSeed(st.raw, seed) })
}

// SetOffset sets where in its sequence the generator starts
// (curandSetGeneratorOffset).
func (g *Generator) SetOffset(offset uint64) error {
	return g.set("SetOffset", "curandSetGeneratorOffset", nil,
		func(st *state) error { return SetGeneratorOffset(st.raw, offset) })
}

// SetOrdering sets the order of the results (curandSetGeneratorOrdering):
// the CURAND_ORDERING_PSEUDO_* orderings for pseudo-random generators,
// CURAND_ORDERING_QUASI_DEFAULT for quasi-random ones (else
// CURAND_STATUS_OUT_OF_RANGE, before any call).
func (g *Generator) SetOrdering(o Ordering) error {
	return g.set("SetOrdering", "curandSetGeneratorOrdering", func(st *state) error { return orderingRule(st.kind, o) }, func(st *state) error { return SetGeneratorOrdering(st.raw, o) })
}

// SetDimensions sets the number of dimensions of a quasi-random generator
// (curandSetQuasiRandomGeneratorDimensions), 1 to 20000; every later
// generate must ask for a multiple of it. A pseudo-random generator has
// none (CURAND_STATUS_TYPE_ERROR).
func (g *Generator) SetDimensions(n uint32) error {
	err := g.set("SetDimensions", "curandSetQuasiRandomGeneratorDimensions", func(st *state) error { return dimensionsRule(st.kind, n) }, func(st *state) error {
		if err := SetQuasiRandomGeneratorDimensions(st.raw, n); err != nil {
			return err
		}
		st.dims = n
		return nil
	})
	return err
}

// SetStream binds the generator to another stream of the same context
// (curandSetStream).
func (g *Generator) SetStream(s *cuda.Stream) error {
	st, err := g.lock("SetStream")
	if err != nil {
		return err
	}
	defer st.life.Unlock()
	err = s.Do("curandSetStream", nil, func(raw libcuda.Stream) error {
		return callErr("curandSetStream", SetStream(st.raw, raw))
	})
	if err != nil {
		return err
	}
	st.life.SetStream(s)
	return nil
}

// Stream is the stream the generator submits its work to.
func (g *Generator) Stream() *cuda.Stream {
	st, err := g.acquire("Stream")
	if err != nil {
		return nil
	}
	defer st.life.Release()
	return st.life.Stream()
}

// Close destroys the generator (curandDestroyGenerator) once the calls in
// progress have returned; work already submitted still runs. The destroy
// waits for the device, so it is handed to sync.Postpone and runs once no
// capture is in progress; a failure is logged. Closing twice, and any use
// after Close, is an error matching cuda.ErrClosed.
func (g *Generator) Close() error {
	if g == nil || g.st == nil {
		return nilGenerator("Close")
	}
	if err := g.st.life.Close(nil); err != nil {
		return err
	}
	g.cleanup.Stop()
	return nil
}

// Float is the element type of the floating-point distributions.
type Float interface{ ~float32 | ~float64 }

// generate checks the count against cuRAND's rules for the generator and
// submits f with out as its written operand.
func generate(g *Generator, op, call string, n int, evenForPseudo bool, f func(st *state, p libcuda.Deviceptr, n uint64) error, out cuda.Operand) error {
	st, err := g.acquire(op)
	if err != nil {
		return err
	}
	defer st.life.Release()
	if err := countRules(op, st.kind, st.dims, n, evenForPseudo); err != nil {
		return err
	}
	ops := [1]cuda.Operand{out}
	return st.life.Stream().Do(call, ops[:], func(raw libcuda.Stream) error {
		if !st.ready.Load() {
			// cuRAND would set the state up now, allocating: refused
			// inside a capture (CURAND_STATUS_ALLOCATION_FAILED, and the
			// capture invalidated), so done here first, outside one.
			if capturing(raw) {
				return fmt.Errorf("curand: %s inside a stream capture on a generator not prepared since its creation or last setter: call Generator.Prepare before the capture: %w", op, cuda.ErrCapturing)
			}
			if err := GenerateSeeds(st.raw); err != nil {
				return callErr("curandGenerateSeeds", err)
			}
			st.ready.Store(true)
		}
		return callErr(call, f(st, ops[0].Ptr(), uint64(n)))
	})
}

// countRules checks a count against cuRAND's rules for a generator of
// kind with dims dimensions.
func countRules(op string, kind RngType, dims uint32, n int, evenForPseudo bool) error {
	if Pseudo(kind) {
		if evenForPseudo && n%2 != 0 {
			return fmt.Errorf("curand: %s: out has %d elements; a pseudo-random generator makes normal numbers in pairs, so the count must be even: %w",
				op, n, CURAND_STATUS_LENGTH_NOT_MULTIPLE)
		}
	} else if n%int(dims) != 0 {
		return fmt.Errorf("curand: %s: out has %d elements, not a multiple of the generator's %d dimensions: %w",
			op, n, dims, CURAND_STATUS_LENGTH_NOT_MULTIPLE)
	}
	return nil
}

func isSingle[T Float]() bool { var z T; return unsafe.Sizeof(z) == 4 }

// Uniform fills out with numbers uniform on (0, 1]
// (curandGenerateUniform, curandGenerateUniformDouble).
func Uniform[T Float](g *Generator, out cuda.Slice[T]) error {
	call := "curandGenerateUniformDouble"
	if isSingle[T]() {
		call = "curandGenerateUniform"
	}
	return generate(g, "Uniform", call, out.Len(), false, func(st *state, p libcuda.Deviceptr, n uint64) error {
		if isSingle[T]() {
			return GenerateUniform(st.raw, devPtr[float32](p), n)
		}
		return GenerateUniformDouble(st.raw, devPtr[float64](p), n)
	}, out.Operand(cuda.Write))
}

// Normal fills out with normally distributed numbers of the given mean and
// standard deviation (curandGenerateNormal, curandGenerateNormalDouble).
// A pseudo-random generator needs an even count.
func Normal[T Float](g *Generator, out cuda.Slice[T], mean, stddev T) error {
	return normal(g, "Normal", out, mean, stddev, false)
}

// LogNormal fills out with numbers whose logarithm is normally
// distributed with the given mean and standard deviation
// (curandGenerateLogNormal, curandGenerateLogNormalDouble). A
// pseudo-random generator needs an even count.
func LogNormal[T Float](g *Generator, out cuda.Slice[T], mean, stddev T) error {
	return normal(g, "LogNormal", out, mean, stddev, true)
}

func normal[T Float](g *Generator, op string, out cuda.Slice[T], mean, stddev T, log bool) error {
	names := [2][2]string{{"curandGenerateNormal", "curandGenerateNormalDouble"}, {"curandGenerateLogNormal", "curandGenerateLogNormalDouble"}}
	i, j := 0, 1
	if log {
		i = 1
	}
	if isSingle[T]() {
		j = 0
	}
	if !(stddev >= 0) {
		return fmt.Errorf("curand: %s: standard deviation %v: %w", op, stddev, CURAND_STATUS_OUT_OF_RANGE)
	}
	return generate(g, op, names[i][j], out.Len(), true, func(st *state, p libcuda.Deviceptr, n uint64) error {
		switch {
		case isSingle[T]() && !log:
			return GenerateNormal(st.raw, devPtr[float32](p), n, float32(mean), float32(stddev))
		case isSingle[T]():
			return GenerateLogNormal(st.raw, devPtr[float32](p), n, float32(mean), float32(stddev))
		case !log:
			return GenerateNormalDouble(st.raw, devPtr[float64](p), n, float64(mean), float64(stddev))
		}
		return GenerateLogNormalDouble(st.raw, devPtr[float64](p), n, float64(mean), float64(stddev))
	}, out.Operand(cuda.Write))
}

// Poisson fills out with Poisson-distributed counts of mean lambda
// (curandGeneratePoisson); lambda must be positive.
func (g *Generator) Poisson(out cuda.Slice[uint32], lambda float64) error {
	if !(lambda > 0) {
		return fmt.Errorf("curand: Poisson: lambda %v, want > 0: %w", lambda, CURAND_STATUS_OUT_OF_RANGE)
	}
	return generate(g, "Poisson", "curandGeneratePoisson", out.Len(), false, func(st *state, p libcuda.Deviceptr, n uint64) error {
		return GeneratePoisson(st.raw, devPtr[uint32](p), n, lambda)
	}, out.Operand(cuda.Write))
}

// Uint32 fills out with the generator's raw 32-bit numbers
// (curandGenerate); the 64-bit Sobol kinds make none
// (CURAND_STATUS_TYPE_ERROR, before any call).
func (g *Generator) Uint32(out cuda.Slice[uint32]) error {
	if g != nil && g.st != nil && is64(g.st.kind) {
		return fmt.Errorf("curand: Uint32: a %v generator makes 64-bit numbers (Uint64): %w", g.st.kind, CURAND_STATUS_TYPE_ERROR)
	}
	return generate(g, "Uint32", "curandGenerate", out.Len(), false, func(st *state, p libcuda.Deviceptr, n uint64) error {
		return Generate(st.raw, devPtr[uint32](p), n)
	}, out.Operand(cuda.Write))
}

// Uint64 fills out with 64-bit raw numbers (curandGenerateLongLong): only
// the 64-bit Sobol kinds make them (else CURAND_STATUS_TYPE_ERROR, before
// any call).
func (g *Generator) Uint64(out cuda.Slice[uint64]) error {
	if g != nil && g.st != nil && !is64(g.st.kind) {
		return fmt.Errorf("curand: Uint64: a %v generator makes 32-bit numbers (Uint32): %w", g.st.kind, CURAND_STATUS_TYPE_ERROR)
	}
	return generate(g, "Uint64", "curandGenerateLongLong", out.Len(), false, func(st *state, p libcuda.Deviceptr, n uint64) error {
		return GenerateLongLong(st.raw, devPtr[uint64](p), n)
	}, out.Operand(cuda.Write))
}

// devPtr is a device address as the *T that cuRAND's C prototypes take.
// The address is not Go memory; the garbage collector ignores it.
func devPtr[T any](p libcuda.Deviceptr) *T { return *(**T)(unsafe.Pointer(&p)) }
