//go:build !gpu

package curand_test

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// cuRAND's rules are checked before any call: nothing reaches the library.
func TestRulesCheckedFirst(t *testing.T) {
	f := newFixture(t)
	xorwow := f.gen(t, curand.CURAND_RNG_PSEUDO_XORWOW)
	sobol32 := f.gen(t, curand.CURAND_RNG_QUASI_SOBOL32)
	sobol64 := f.gen(t, curand.CURAND_RNG_QUASI_SOBOL64)
	testenv.Must(t, sobol32.SetDimensions(4))
	odd := alloc[float32](t, f.s, 5)
	six := alloc[float64](t, f.s, 6)
	u32 := alloc[uint32](t, f.s, 8)
	u64 := alloc[uint64](t, f.s, 8)
	calls := testenv.FFTRandStat(t, "calls")
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"Normal of an odd count", curand.Normal(xorwow, odd, 0, 1), curand.CURAND_STATUS_LENGTH_NOT_MULTIPLE},
		{"LogNormal of an odd count", curand.LogNormal(xorwow, odd, 0, 1), curand.CURAND_STATUS_LENGTH_NOT_MULTIPLE},
		{"a count not a multiple of the dimensions", curand.Uniform(sobol32, six), curand.CURAND_STATUS_LENGTH_NOT_MULTIPLE},
		{"Uint32 from Sobol64", sobol64.Uint32(u32), curand.CURAND_STATUS_TYPE_ERROR},
		{"Uint64 from XORWOW", xorwow.Uint64(u64), curand.CURAND_STATUS_TYPE_ERROR},
		{"a seed for Sobol32", sobol32.SetSeed(1), curand.CURAND_STATUS_TYPE_ERROR},
		{"dimensions for XORWOW", xorwow.SetDimensions(2), curand.CURAND_STATUS_TYPE_ERROR},
		{"0 dimensions", sobol32.SetDimensions(0), curand.CURAND_STATUS_OUT_OF_RANGE},
		{"a quasi ordering for XORWOW", xorwow.SetOrdering(curand.CURAND_ORDERING_QUASI_DEFAULT), curand.CURAND_STATUS_OUT_OF_RANGE},
		{"Poisson of lambda 0", xorwow.Poisson(u32, 0), curand.CURAND_STATUS_OUT_OF_RANGE},
		{"a negative standard deviation", curand.Normal(xorwow, six, 0, -1), curand.CURAND_STATUS_OUT_OF_RANGE},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if n := testenv.FFTRandStat(t, "calls"); n != calls {
		t.Errorf("%d calls reached the library", n-calls)
	}
	// The same generators work with counts that follow the rules.
	testenv.Must(t, curand.Normal(xorwow, six, 0, 1))
	testenv.Must(t, curand.Uniform(sobol32, alloc[float32](t, f.s, 8)))
	testenv.Must(t, sobol64.Uint64(u64))
	testenv.Must(t, xorwow.Poisson(u32, 4))
	testenv.Must(t, curand.LogNormal(xorwow, six, 0, 0.5))
	if n := testenv.FFTRandStat(t, "calls"); n != calls+5 {
		t.Errorf("%d calls reached the library, want 5", n-calls)
	}
	for i, v := range download(t, f.s, six) {
		if !(v > 0) {
			t.Errorf("LogNormal[%d] = %v, want > 0", i, v)
		}
	}
}

// A generate records the stream on its Slice: Free waits for the work.
func TestGenerateRecordsItsSlice(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	gate := testenv.NewGate(t)
	home, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, home.Close()) })
	out, err := cuda.Alloc[float32](home, 64)
	testenv.Must(t, err)
	testenv.Must(t, f.ctx.Sync(testenv.Context(t)))
	base := testenv.SimStat(t, "live_allocations")
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, curand.Uniform(g, out))
	testenv.Must(t, out.Free())
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := testenv.SimStat(t, "live_allocations"); n != base {
			t.Fatalf("freed while the generate's stream is held (%d live, want %d)", n, base)
		}
	}
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base-1 })
}

// After Close every use is an error matching cuda.ErrClosed, and the
// generator is destroyed.
func TestUseAfterClose(t *testing.T) {
	f := newFixture(t)
	g, err := curand.New(f.s, curand.CURAND_RNG_PSEUDO_XORWOW)
	testenv.Must(t, err)
	raw := uintptr(g.Raw())
	if !testenv.GeneratorLive(t, raw) {
		t.Fatalf("the generator is not live after New")
	}
	testenv.Must(t, g.Close())
	out := alloc[float32](t, f.s, 4)
	for name, err := range map[string]error{
		"Close":   g.Close(),
		"Uniform": curand.Uniform(g, out),
		"SetSeed": g.SetSeed(1),
		"Uint32":  g.Uint32(alloc[uint32](t, f.s, 4)),
	} {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.GeneratorLive(t, raw) })
	var nilGen *curand.Generator
	if err := curand.Uniform(nilGen, out); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Uniform on a nil Generator: %v", err)
	}
}

// A captured generate reaches the library once, at the capture; the
// graph's launches run its work without calling the library.
func TestCapturedGenerateReachesTheLibraryOnce(t *testing.T) {
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	out := alloc[float32](t, f.s, 8)
	testenv.Must(t, g.Prepare()) // a generate inside a capture needs it
	calls := testenv.FFTRandStat(t, "calls")
	graph, err := f.s.Capture(func(s *cuda.Stream) error { return curand.Normal(g, out, 1, 2) })
	testenv.Must(t, err)
	defer func() { testenv.Must(t, graph.Destroy()) }()
	e, err := graph.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, e.Destroy()) }()
	for range 3 {
		testenv.Must(t, f.s.LaunchGraph(e))
	}
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	if n := testenv.FFTRandStat(t, "calls"); n != calls+1 {
		t.Errorf("%d generates reached the library, want the captured 1", n-calls)
	}
}

// The stand-in, as cuRAND, sets a generator's state up at its first
// generate after a setter, and fails so (CURAND_STATUS_ALLOCATION_FAILED)
// inside a capture, where Prepare refuses to run: the call beneath
// Normal's guard fails as cuRAND's does.
func TestUnpreparedGenerateInsideCaptureFailsInTheLibrary(t *testing.T) {
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	testenv.Must(t, g.SetSeed(5))
	out := alloc[float32](t, f.s, 8)
	var raw, prep error
	_, err := f.s.Capture(func(s *cuda.Stream) error {
		prep = g.Prepare()
		ops := []cuda.Operand{out.Operand(cuda.Write)}
		return s.Do("curandGenerateNormal", ops, func(libcuda.Stream) error {
			p := ops[0].Ptr()
			raw = curand.GenerateNormal(g.Raw(), *(**float32)(unsafe.Pointer(&p)), 8, 1, 2)
			return raw
		})
	})
	if !errors.Is(prep, cuda.ErrCapturing) {
		t.Errorf("Prepare inside a capture: %v, want cuda.ErrCapturing", prep)
	}
	if !errors.Is(raw, curand.CURAND_STATUS_ALLOCATION_FAILED) || err == nil {
		t.Errorf("curandGenerateNormal inside a capture before Prepare: %v (capture: %v), want CURAND_STATUS_ALLOCATION_FAILED", raw, err)
	}
}
