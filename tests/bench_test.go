//go:build linux

package tests

import (
	"context"
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	bench "github.com/purecuda/purecuda/internal/benchrows"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// BenchmarkCall compares the generated call path with purego's SyscallN and
// RegisterFunc on the same driver functions. Compare ways with benchstat;
// tools/bench prints the same rows beside a C baseline.
func BenchmarkCall(b *testing.B) {
	f := benchFixture(b)
	for _, r := range f.CallRows() {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// BenchmarkRows runs tools/bench's Go rows, so that they can be tried on
// the simulator: go test -run XXX -bench Rows/launch ./tests.
func BenchmarkRows(b *testing.B) {
	f := benchFixture(b)
	var rows []bench.Row
	for _, r := range [][]bench.Row{f.SyncRows(), f.GraphRows(), f.HostmemRows(), f.StallRows()} {
		rows = append(rows, r...)
	}
	for _, r := range rows {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// benchFixture sets up tools/bench's fixture for b and closes it after.
func benchFixture(b *testing.B) *bench.Fixture {
	f, err := bench.Setup()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	})
	return f
}

// BenchmarkPaired runs tools/bench's rows of Go and C in alternate rounds
// (the C compiled here with cc and loaded into this process). Each row
// runs all its rounds once: go test -run XXX -bench Paired -benchtime=1x ./tests.
func BenchmarkPaired(b *testing.B) {
	f := benchFixture(b)
	c := loadC(b)
	for _, r := range f.PairedRows(c) {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// loadC compiles and loads the C half of the paired rows against the
// driver (or simulator) these tests loaded.
func loadC(t testing.TB) *bench.C {
	lib, ok := libcuda.Loaded()
	if !ok {
		t.Fatal("no driver loaded")
	}
	c, done, err := bench.LoadC("cc", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return c
}

// The Jacobi rows' solver in Go (with its residual wrapped and Use()d in
// each capture, and in pinned memory) and in C make the same number of
// sweeps and reach the solution, x = 1; each sweep after the first
// updates the cached graph in place.
func TestJacobiGoAndCAgree(t *testing.T) {
	testenv.NoErrorsLogged(t)
	ctx := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	c := loadC(t)
	const n = 32
	j, err := bench.NewJacobi(n)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, j.Close()) })
	var p unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&p, 64, 0))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFreeHost(p)) })
	pinned := (*float64)(p)
	// Sweeps for the residual sum_i |dx_i| to fall below the tolerance:
	// the error shrinks by (n-1)/(n+1) a sweep from n * 2n/(n+1).
	want := 0
	for r := float64(n) * 2 * n / (n + 1); r >= bench.JacobiTol; r *= float64(n-1) / (n + 1) {
		want++
	}
	want++ // the sweep that sees it below
	solves := []struct {
		name  string
		solve func() (int, error)
	}{
		{"Go, wrapped residual", func() (int, error) { return j.SolveGo(ctx, s, make([]float64, 1), nil) }},
		{"Go, pinned residual", func() (int, error) { return j.SolveGo(ctx, s, nil, pinned) }},
		{"C", func() (int, error) { return j.SolveC(c, s, pinned) }},
	}
	first := 0
	for _, sv := range solves {
		testenv.Must(t, j.Reset())
		iters, err := sv.solve()
		testenv.Must(t, err)
		if iters < want-1 || iters > want+1 {
			t.Errorf("%s: %d sweeps, want %d (±1: rounding)", sv.name, iters, want)
		}
		x, err := j.X(iters)
		testenv.Must(t, err)
		for i, v := range x {
			if math.Abs(v-1) > 1e-3 {
				t.Fatalf("%s: x[%d] = %v, want 1", sv.name, i, v)
			}
		}
		if first == 0 {
			first = iters
		} else if iters != first {
			t.Errorf("%s: %d sweeps, %s: %d", solves[0].name, first, sv.name, iters)
		}
	}
	testenv.Must(t, hostmem.Drain(context.Background()))
}

// The fast paths of issue 17, as plain benchmarks for -benchmem and
// -cpuprofile/-memprofile (go test -run XXX -bench Fast ./tests).
func BenchmarkFast(b *testing.B) {
	f := benchFixture(b)
	for _, r := range f.FastRows() {
		b.Run(r.Op+"/"+r.Way, r.F)
	}
}

// A wait on an idle stream and on an event that has completed allocate
// nothing (issue 17: the idle path of a wait is one query).
func TestIdleWaitAllocations(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev)) })
	testenv.Must(t, libcuda.EventRecord(ev, s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	ctx := context.Background()
	for _, c := range []struct {
		name string
		wait func() error
	}{
		{"sync.Stream", func() error { return sync.Stream(ctx, 0, s) }},
		{"sync.Event", func() error { return sync.Event(ctx, ev) }},
		{"sync.EventDone", func() error { _, err := sync.EventDone(ev); return err }},
	} {
		var err error
		if n := testing.AllocsPerRun(1000, func() { err = errors.Join(err, c.wait()) }); n != 0 {
			t.Errorf("%s: %v allocations a wait, want 0", c.name, n)
		}
		testenv.Must(t, err)
	}
}
