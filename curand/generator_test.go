package curand_test

import (
	"errors"
	"fmt"
	"slices"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
)

var pseudoKinds = []curand.RngType{curand.CURAND_RNG_PSEUDO_XORWOW, curand.CURAND_RNG_PSEUDO_MRG32K3A,
	curand.CURAND_RNG_PSEUDO_MTGP32, curand.CURAND_RNG_PSEUDO_MT19937, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10}

var quasiKinds = []curand.RngType{curand.CURAND_RNG_QUASI_SOBOL32, curand.CURAND_RNG_QUASI_SCRAMBLED_SOBOL32,
	curand.CURAND_RNG_QUASI_SOBOL64, curand.CURAND_RNG_QUASI_SCRAMBLED_SOBOL64}

// Two generators of each pseudo-random kind with the same seed give the
// same numbers; another seed gives others.
func TestSameSeedSameNumbers(t *testing.T) {
	f := newFixture(t)
	for _, kind := range pseudoKinds {
		t.Run(kind.String(), func(t *testing.T) {
			draw := func(seed uint64) []float32 {
				g := f.gen(t, kind)
				testenv.Must(t, g.SetSeed(seed))
				out := alloc[float32](t, f.s, 64)
				testenv.Must(t, curand.Normal(g, out, 0, 1))
				return download(t, f.s, out)
			}
			a, b, c := draw(1234), draw(1234), draw(1235)
			if !slices.Equal(a, b) {
				t.Fatalf("seed 1234 twice: %v and %v", a[:4], b[:4])
			}
			if slices.Equal(a, c) {
				t.Fatalf("seeds 1234 and 1235 gave the same numbers")
			}
		})
	}
}

// The offset moves the start: the numbers from offset 8 are those that
// followed the first 8.
func TestOffsetSkipsAhead(t *testing.T) {
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	testenv.Must(t, g.SetSeed(7))
	all := alloc[uint32](t, f.s, 16)
	testenv.Must(t, g.Uint32(all))
	testenv.Must(t, g.SetSeed(7))
	testenv.Must(t, g.SetOffset(8))
	tail := alloc[uint32](t, f.s, 8)
	testenv.Must(t, g.Uint32(tail))
	if a, b := download(t, f.s, all), download(t, f.s, tail); !slices.Equal(a[8:], b) {
		t.Fatalf("from offset 8: %v, want %v", b, a[8:])
	}
}

// Every kind generates: uniform numbers lie in (0, 1].
func TestEveryKindGenerates(t *testing.T) {
	f := newFixture(t)
	for _, kind := range append(slices.Clone(pseudoKinds), quasiKinds...) {
		g := f.gen(t, kind)
		out := alloc[float64](t, f.s, 8)
		testenv.Must(t, curand.Uniform(g, out))
		for i, v := range download(t, f.s, out) {
			if !(v > 0 && v <= 1) {
				t.Errorf("%v: Uniform[%d] = %v", kind, i, v)
			}
		}
	}
	if _, err := curand.New(f.s, curand.CURAND_RNG_TEST); !errors.Is(err, curand.CURAND_STATUS_TYPE_ERROR) {
		t.Errorf("New of CURAND_RNG_TEST: %v", err)
	}
}

// Goroutines with generators of their own on their own streams.
func TestGoroutinesWithTheirOwnGenerators(t *testing.T) {
	f := newFixture(t)
	const workers = 8
	var wg gosync.WaitGroup
	errs := make(chan error, workers)
	results := make([][]uint32, workers)
	for w := range workers {
		s, err := f.ctx.NewStream(cuda.NonBlocking())
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.Must(t, s.Close()) })
		g, err := curand.New(s, curand.CURAND_RNG_PSEUDO_XORWOW)
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.Must(t, g.Close()) })
		out := alloc[uint32](t, s, 32)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.SetSeed(uint64(w % 2)); err != nil {
				errs <- err
				return
			}
			if err := g.Uint32(out); err != nil {
				errs <- err
				return
			}
			r := make([]uint32, 32)
			if err := cuda.CopyToHost(s, r, out); err != nil {
				errs <- err
				return
			}
			results[w] = r
		}()
	}
	testenv.Recv(t, testenv.Go(wg.Wait), "the workers")
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 2; w < workers; w++ {
		if fmt.Sprint(results[w]) != fmt.Sprint(results[w%2]) {
			t.Errorf("worker %d (seed %d) differs from worker %d", w, w%2, w%2)
		}
	}
}

// A generate allocates nothing: its checks, its operand and the call with
// float arguments.
func TestGenerateAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	out := alloc[float32](t, f.s, 64)
	testenv.Must(t, curand.Normal(g, out, 0, 1))
	var err error
	if n := testing.AllocsPerRun(50, func() { err = curand.Normal(g, out, 0, 1) }); n != 0 {
		t.Errorf("Normal allocates %v times", n)
	}
	testenv.Must(t, err)
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
}

// A generate captured into a graph runs at each launch of the graph.
func TestGenerateInsideCaptureLaunchedManyTimes(t *testing.T) {
	f := newFixture(t)
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	testenv.Must(t, g.SetSeed(3))
	out := alloc[float32](t, f.s, 8)
	zero := make([]float32, 8)
	testenv.Must(t, cuda.CopyToDevice(f.s, out, zero))
	// Not prepared since SetSeed: the generate inside a capture is refused,
	// naming the need, before cuRAND's allocation invalidates the capture.
	if _, err := f.s.Capture(func(s *cuda.Stream) error { return curand.Normal(g, out, 1, 2) }); !errors.Is(err, cuda.ErrCapturing) {
		t.Fatalf("a generate captured before Prepare: %v, want cuda.ErrCapturing", err)
	}
	testenv.Must(t, g.Prepare())
	graph, err := f.s.Capture(func(s *cuda.Stream) error { return curand.Normal(g, out, 1, 2) })
	testenv.Must(t, err)
	defer func() { testenv.Must(t, graph.Destroy()) }()
	e, err := graph.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.Must(t, e.Destroy()) }()
	if got := download(t, f.s, out); !slices.Equal(got, zero) {
		t.Fatalf("the capture ran the generate: %v", got)
	}
	for i := range 10 {
		testenv.Must(t, cuda.CopyToDevice(f.s, out, zero))
		testenv.Must(t, f.s.LaunchGraph(e))
		if got := download(t, f.s, out); slices.Equal(got, zero) {
			t.Fatalf("launch %d: nothing generated", i)
		}
	}
}
