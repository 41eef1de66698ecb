package curand

import (
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
)

// HostGenerator is a cuRAND generator that runs on the CPU
// (curandCreateGeneratorHost) and fills Go slices: the same kinds, rules
// and sequences as a Generator, for code that wants cuRAND's numbers on the
// host. Each call returns when its numbers are written. It is safe for
// concurrent use (its calls take turns). A HostGenerator dropped without
// Close is destroyed by the garbage collector, and a warning is logged.
type HostGenerator struct {
	st      *hostState
	cleanup runtime.Cleanup
}

type hostState struct {
	mu     gosync.Mutex
	closed bool
	raw    Handle
	kind   RngType
	dims   uint32
}

// NewHost creates a host generator of the given kind
// (curandCreateGeneratorHost).
func NewHost(kind RngType) (*HostGenerator, error) {
	if err := checkKind("NewHost", kind); err != nil {
		return nil, err
	}
	st := &hostState{kind: kind, dims: 1}
	if err := CreateGeneratorHost(&st.raw, kind); err != nil {
		return nil, callErr("curandCreateGeneratorHost", err)
	}
	g := &HostGenerator{st: st}
	g.cleanup = runtime.AddCleanup(g, func(st *hostState) {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.closed {
			return
		}
		st.closed = true
		hostDropped.Do(func() {
			slog.Warn("curand: a HostGenerator was dropped without Close; the garbage collector destroyed it (further ones are destroyed without a log)")
		})
		if err := DestroyGenerator(st.raw); err != nil {
			slog.Error("curand: destroying a dropped HostGenerator", "err", err)
		}
	}, st)
	return g, nil
}

var hostDropped gosync.Once

// do runs f on the open generator, under its lock.
func (g *HostGenerator) do(op string, f func(st *hostState) error) error {
	if g == nil || g.st == nil {
		return nilGenerator(op)
	}
	st := g.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return fmt.Errorf("curand: %s: %w", op, cuda.ErrClosed)
	}
	return f(st)
}

// SetSeed is Generator.SetSeed for the host generator.
func (g *HostGenerator) SetSeed(seed uint64) error {
	return g.do("SetSeed", func(st *hostState) error {
		if err := seedRule(st.kind); err != nil {
			return fmt.Errorf("curand: SetSeed: %w", err)
		}
		return callErr("curandSetPseudoRandomGeneratorSeed", SetPseudoRandomGeneratorSeed(st.raw, seed))
	})
}

// SetOffset is Generator.SetOffset for the host generator.
func (g *HostGenerator) SetOffset(offset uint64) error {
	return g.do("SetOffset", func(st *hostState) error {
		return callErr("curandSetGeneratorOffset", SetGeneratorOffset(st.raw, offset))
	})
}

// SetOrdering is Generator.SetOrdering for the host generator.
func (g *HostGenerator) SetOrdering(o Ordering) error {
	return g.do("SetOrdering", func(st *hostState) error {
		if err := orderingRule(st.kind, o); err != nil {
			return fmt.Errorf("curand: SetOrdering: %w", err)
		}
		return callErr("curandSetGeneratorOrdering", SetGeneratorOrdering(st.raw, o))
	})
}

// SetDimensions is Generator.SetDimensions for the host generator.
func (g *HostGenerator) SetDimensions(n uint32) error {
	return g.do("SetDimensions", func(st *hostState) error {
		if err := dimensionsRule(st.kind, n); err != nil {
			return fmt.Errorf("curand: SetDimensions: %w", err)
		}
		if err := SetQuasiRandomGeneratorDimensions(st.raw, n); err != nil {
			return callErr("curandSetQuasiRandomGeneratorDimensions", err)
		}
		st.dims = n
		return nil
	})
}

// Close destroys the generator (curandDestroyGenerator). Closing twice,
// and any use after Close, is an error matching cuda.ErrClosed.
func (g *HostGenerator) Close() error {
	err := g.do("Close", func(st *hostState) error {
		st.closed = true
		return callErr("curandDestroyGenerator", DestroyGenerator(st.raw))
	})
	if g != nil && g.st != nil && err == nil {
		g.cleanup.Stop()
	}
	return err
}

// hostGenerate checks the count and runs f with the first element's
// address (nil for an empty slice, which makes no call).
func hostGenerate[T any](g *HostGenerator, op, call string, out []T, even bool, f func(raw Handle, p *T, n uint64) error) error {
	return g.do(op, func(st *hostState) error {
		if err := countRules(op, st.kind, st.dims, len(out), even); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		err := f(st.raw, &out[0], uint64(len(out)))
		runtime.KeepAlive(out)
		return callErr(call, err)
	})
}

// HostUniform is Uniform into a Go slice, from a host generator.
func HostUniform[T Float](g *HostGenerator, out []T) error {
	return hostGenerate(g, "HostUniform", "curandGenerateUniform", out, false, func(raw Handle, p *T, n uint64) error {
		if isSingle[T]() {
			return GenerateUniform(raw, (*float32)(unsafe.Pointer(p)), n)
		}
		return GenerateUniformDouble(raw, (*float64)(unsafe.Pointer(p)), n)
	})
}

// HostNormal is Normal into a Go slice, from a host generator.
func HostNormal[T Float](g *HostGenerator, out []T, mean, stddev T) error {
	return hostNormal(g, "HostNormal", out, mean, stddev, false)
}

// HostLogNormal is LogNormal into a Go slice, from a host generator.
func HostLogNormal[T Float](g *HostGenerator, out []T, mean, stddev T) error {
	return hostNormal(g, "HostLogNormal", out, mean, stddev, true)
}

func hostNormal[T Float](g *HostGenerator, op string, out []T, mean, stddev T, log bool) error {
	if !(stddev >= 0) {
		return fmt.Errorf("curand: %s: standard deviation %v: %w", op, stddev, CURAND_STATUS_OUT_OF_RANGE)
	}
	return hostGenerate(g, op, "curandGenerateNormal", out, true, func(raw Handle, p *T, n uint64) error {
		switch {
		case isSingle[T]() && !log:
			return GenerateNormal(raw, (*float32)(unsafe.Pointer(p)), n, float32(mean), float32(stddev))
		case isSingle[T]():
			return GenerateLogNormal(raw, (*float32)(unsafe.Pointer(p)), n, float32(mean), float32(stddev))
		case !log:
			return GenerateNormalDouble(raw, (*float64)(unsafe.Pointer(p)), n, float64(mean), float64(stddev))
		}
		return GenerateLogNormalDouble(raw, (*float64)(unsafe.Pointer(p)), n, float64(mean), float64(stddev))
	})
}

// Poisson is Generator.Poisson into a Go slice.
func (g *HostGenerator) Poisson(out []uint32, lambda float64) error {
	if !(lambda > 0) {
		return fmt.Errorf("curand: Poisson: lambda %v, want > 0: %w", lambda, CURAND_STATUS_OUT_OF_RANGE)
	}
	return hostGenerate(g, "Poisson", "curandGeneratePoisson", out, false, func(raw Handle, p *uint32, n uint64) error {
		return GeneratePoisson(raw, p, n, lambda)
	})
}

// Uint32 is Generator.Uint32 into a Go slice.
func (g *HostGenerator) Uint32(out []uint32) error {
	if g != nil && g.st != nil && is64(g.st.kind) {
		return fmt.Errorf("curand: Uint32: a %v generator makes 64-bit numbers (Uint64): %w", g.st.kind, CURAND_STATUS_TYPE_ERROR)
	}
	return hostGenerate(g, "Uint32", "curandGenerate", out, false, Generate)
}

// Uint64 is Generator.Uint64 into a Go slice.
func (g *HostGenerator) Uint64(out []uint64) error {
	if g != nil && g.st != nil && !is64(g.st.kind) {
		return fmt.Errorf("curand: Uint64: a %v generator makes 32-bit numbers (Uint32): %w", g.st.kind, CURAND_STATUS_TYPE_ERROR)
	}
	return hostGenerate(g, "Uint64", "curandGenerateLongLong", out, false, GenerateLongLong)
}
