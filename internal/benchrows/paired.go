//go:build linux

package bench

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/purecuda/purecuda/libcuda"
)

//go:embed csrc/paired.c
var pairedC []byte

// C is the C half of the paired rows: paired.c, compiled with cc on the
// machine that runs the rows and loaded into this process, so that its
// rounds run on the same thread, context, stream and memory as the Go
// rounds, in the same minutes. Each function runs one round and returns a
// CUresult; see paired.c.
type C struct {
	streamSync    func(s libcuda.Stream, n int) int32
	streamQuery   func(s libcuda.Stream, n int) int32
	eventQuery    func(e libcuda.Event, n int) int32
	eventSync     func(e libcuda.Event, n int) int32
	launch4       func(f libcuda.Function, s libcuda.Stream, a, b, c, d uint64, n int) int32
	cachedKernels func(f libcuda.Function, s libcuda.Stream, buf libcuda.Deviceptr, ints uint64, k, n int) int32
	jacobi        func(f libcuda.Function, s libcuda.Stream, a, b, x, xnew, sum libcuda.Deviceptr, n uint64,
		host unsafe.Pointer, tol float64, max int32, iters *int32) int32
	hostFuncs func(s libcuda.Stream, n int) int32

	// The call-path rows (callpath.go): functions Go calls once an
	// operation through internal/dl, by address, and two C loops.
	launch1, query1, empty uintptr
	emptyLoop              func(n int) int32
	queryLocked            func(s libcuda.Stream, n int) int32
	launch4Gap             func(f libcuda.Function, s libcuda.Stream, a, b, c, d uint64, n, gap int) int32
}

// LoadC compiles paired.c with the C compiler cc into a temporary
// directory, loads it and points it at the driver library at libPath (the
// one this process loaded). The library stays loaded; done removes its
// files.
func LoadC(cc, libPath string) (c *C, done func(), err error) {
	dir, err := os.MkdirTemp("", "purecuda-paired-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	src, so := filepath.Join(dir, "paired.c"), filepath.Join(dir, "paired.so")
	if err := os.WriteFile(src, pairedC, 0o644); err != nil {
		return nil, nil, err
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling paired.c: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, nil, err
	}
	var initC func(path string) int32
	purego.RegisterLibFunc(&initC, h, "pc_paired_init")
	if initC(libPath) != 0 {
		return nil, nil, fmt.Errorf("paired.c: a driver function is missing from %s", libPath)
	}
	c = &C{}
	purego.RegisterLibFunc(&c.streamSync, h, "pc_stream_sync")
	purego.RegisterLibFunc(&c.eventSync, h, "pc_event_sync")
	purego.RegisterLibFunc(&c.streamQuery, h, "pc_stream_query")
	purego.RegisterLibFunc(&c.eventQuery, h, "pc_event_query")
	purego.RegisterLibFunc(&c.launch4, h, "pc_launch4")
	purego.RegisterLibFunc(&c.cachedKernels, h, "pc_cached_kernels")
	purego.RegisterLibFunc(&c.jacobi, h, "pc_jacobi")
	purego.RegisterLibFunc(&c.hostFuncs, h, "pc_host_funcs")
	purego.RegisterLibFunc(&c.emptyLoop, h, "pc_empty_loop")
	purego.RegisterLibFunc(&c.queryLocked, h, "pc_query_locked")
	purego.RegisterLibFunc(&c.launch4Gap, h, "pc_launch4_gap")
	for _, s := range []struct {
		p    *uintptr
		name string
	}{{&c.launch1, "pc_launch1"}, {&c.query1, "pc_query1"}, {&c.empty, "pc_empty"}} {
		if *s.p, err = purego.Dlsym(h, s.name); err != nil {
			return nil, nil, err
		}
	}
	return c, done, nil
}

func cErr(r int32) error {
	if r != 0 {
		return libcuda.Result(r)
	}
	return nil
}

// pair is one row of two ways of doing the same operation, run in
// alternate rounds of perRound operations each, which of the two goes
// first changing from pair to pair: the ratio of each pair comes from the
// same minutes, so the machine's drift between rows does not blur it.
// Only a's allocations are counted.
type pair struct {
	op, a, bName string
	perRound     int
	pairs        int
	// setup runs on the locked thread with the fixture's context current;
	// it returns the two rounds. Its cleanups go with b.Cleanup.
	setup func(b *testing.B) (a, other func(n int) error)
	// report, if set, reports the row's own metrics after the rounds.
	report func()
}

// PairMetrics are the metrics that a paired row reports; tools/bench's
// table takes its figures from them.
const (
	MetricA      = "a-ns/op"     // the median over rounds of the row's way, per operation
	MetricB      = "b-ns"        // the same of the other way (C for most rows)
	MetricRatio  = "a/b-median"  // the median of the pairs' ratios
	MetricDiff   = "a-b-ns"      // the median of the pairs' differences, per operation
	MetricAllocs = "a-allocs/op" // the row's way's allocations per operation
	MetricPairs  = "pairs"
)

func (p pair) row(fx *Fixture) Row {
	return Row{Op: p.op, Way: p.a, Other: p.bName, Paired: true, F: func(b *testing.B) {
		fx.OnThread(b, func(b *testing.B) {
			a, other := p.setup(b)
			// One round of each first: what is made once (a graph, a
			// registration, an event in a pool) is made outside the count.
			must(b, a(p.perRound))
			must(b, other(p.perRound))
			var as, bs, ratios, diffs []float64
			var mallocs uint64
			var ms runtime.MemStats
			timed := func(r func(int) error) float64 {
				t0 := time.Now()
				must(b, r(p.perRound))
				return float64(time.Since(t0).Nanoseconds()) / float64(p.perRound)
			}
			for i := range p.pairs {
				var ta, tb float64
				if i%2 == 1 {
					tb = timed(other)
				}
				runtime.ReadMemStats(&ms)
				m0 := ms.Mallocs
				ta = timed(a)
				runtime.ReadMemStats(&ms)
				mallocs += ms.Mallocs - m0
				if i%2 == 0 {
					tb = timed(other)
				}
				as, bs = append(as, ta), append(bs, tb)
				ratios, diffs = append(ratios, ta/tb), append(diffs, ta-tb)
			}
			b.ReportMetric(median(as), MetricA)
			b.ReportMetric(median(bs), MetricB)
			b.ReportMetric(median(ratios), MetricRatio)
			b.ReportMetric(median(diffs), MetricDiff)
			b.ReportMetric(float64(mallocs)/float64(p.pairs*p.perRound), MetricAllocs)
			b.ReportMetric(float64(p.pairs), MetricPairs)
			if p.report != nil {
				p.report()
			}
		})
	}}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// PairedRows are the rows of Go and C in alternate rounds (C from c, see
// LoadC): a wait on an idle stream and on an event already done, host
// functions, a launch of 4 arguments (libcuda's Func.Launch and package
// cuda's Stream.Launch, with Slices and with raw pointers),
// graph.Cached.Run of 100 kernels unchanged, the cost of hostmem's
// Buffer.Use inside a capture, and a Jacobi solver; some again with pinned
// calls off (throughCgocall) or with the calls that queue work pinned too
// (withQueuedPinned). Run each once (-benchtime=1x): a row runs all its
// rounds whatever b.N is.
func (f *Fixture) PairedRows(c *C) []Row {
	rows := []pair{f.waitPair(c), f.eventPair(c)}
	rows = append(rows, f.hostFuncPairs(c)...) // host functions on the driver's thread, and after an idle spell
	rows = append(rows, f.floorPairs(c)...)
	rows = append(rows, f.launchPair(c), f.streamLaunchPair(c), f.streamLaunchPtrPair(c), f.hostFuncPair(c))
	// The rows of issue 29 items 2 and 3 again with pinned calls off, and
	// the launches with the calls that queue work pinned too.
	rows = append(rows, throughCgocall(f.waitPair(c)), throughCgocall(f.eventPair(c)),
		throughCgocall(f.launchPair(c)), throughCgocall(f.streamLaunchPair(c)),
		withQueuedPinned(f.launchPair(c)), withQueuedPinned(f.streamLaunchPair(c)))
	rows = append(rows, f.callPathPairs(c)...)
	rows = append(rows, f.cachedPairs(c)...)
	rows = append(rows, f.usePairs()...)
	rows = append(rows, f.jacobiPairs(c)...)
	for _, p := range f.jacobiPairs(c) {
		rows = append(rows, withQueuedPinned(p))
	}
	var out []Row
	for _, p := range rows {
		out = append(out, p.row(f))
	}
	return out
}
