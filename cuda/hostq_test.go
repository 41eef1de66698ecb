//go:build linux && (amd64 || arm64)

package cuda_test

import (
	"runtime"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// goroutineID is the number runtime.Stack prints for the calling
// goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
	return id
}

// HostFunc's calls reach Go through the queue: the driver's thread never
// enters Go for them (no call of the entry into Go is counted), and one
// stream's host functions run on the dispatcher, one goroutine, in the
// order submitted. HostFuncOnDriverThread's do enter Go.
func TestHostFuncNeverEntersGoOnTheDriverThread(t *testing.T) {
	if !cuda.HostQueueing {
		t.Fatal("HostFunc does not go through the queue on linux/" + runtime.GOARCH)
	}
	f := newFixture(t)
	entered0, _ := cuda.HostEntries()
	posted0 := cuda.HostQueuePosts()
	var mu gosync.Mutex
	var order []int
	ids := map[string]bool{}
	const n = 200
	for i := range n {
		testenv.Must(t, f.s.HostFunc(func() {
			id := goroutineID()
			mu.Lock()
			order = append(order, i)
			ids[id] = true
			mu.Unlock()
		}))
	}
	sync(t, f.s)
	entered, _ := cuda.HostEntries()
	if d := entered - entered0; d != 0 {
		t.Errorf("%d of %d HostFunc calls entered Go on the driver's thread, want none", d, n)
	}
	if d := cuda.HostQueuePosts() - posted0; d != n {
		t.Errorf("%d records posted to the queue for %d HostFunc calls", d, n)
	}
	mu.Lock()
	for i, v := range order {
		if v != i {
			t.Fatalf("host functions ran in the order %v", order)
		}
	}
	if len(order) != n || len(ids) != 1 {
		t.Errorf("%d of %d host functions ran, on %d goroutines; want all, on the dispatcher", len(order), n, len(ids))
	}
	mu.Unlock()
	testenv.Must(t, f.s.HostFuncOnDriverThread(func() {}))
	sync(t, f.s)
	if entered, _ := cuda.HostEntries(); entered-entered0 != 1 {
		t.Errorf("HostFuncOnDriverThread: %d entries into Go, want 1", entered-entered0)
	}
}

// The dispatcher runs while a host function submitted through the queue
// can still be called: it stays past its idle time while a graph with
// one exists (and runs it at a launch after that time), and ends once the
// graph is gone and it has been idle.
func TestHostFuncDispatcherLivesAsLongAsAnEntry(t *testing.T) {
	f := newFixture(t)
	var ran atomic.Int32
	g, err := f.s.Capture(func(s *cuda.Stream) error { return s.HostFunc(func() { ran.Add(1) }) })
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	time.Sleep(3 * cuda.HostWorkerIdle) // the dispatcher's idle time, three times over
	if !cuda.HostDispatching() {
		t.Fatal("the dispatcher ended while a graph holds a host function")
	}
	for range 2 {
		testenv.Must(t, f.s.LaunchGraph(e))
	}
	sync(t, f.s)
	if got := ran.Load(); got != 2 {
		t.Fatalf("the graph's host function ran %d times in 2 launches", got)
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.Eventually(t, "the dispatcher ends", func() bool { return !cuda.HostDispatching() })
	// And it starts again for the next host function.
	testenv.Must(t, f.s.HostFunc(func() { ran.Add(1) }))
	sync(t, f.s)
	if got := ran.Load(); got != 3 {
		t.Errorf("a host function after the dispatcher ended: %d runs, want 3", got)
	}
}

// Many streams, each with its own driver thread in the simulator, post
// host functions at the same time: every one runs exactly once, none is
// lost between the threads' pushes and the dispatcher's takes, and
// records taken together are run side by side.
func TestHostFuncsOfManyStreamsAtOnceAllRun(t *testing.T) {
	f := newFixture(t)
	const streams, each = 8, 500
	var ran [streams]atomic.Int32
	var wg gosync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		s := newStream(t, f.ctx)
		wg.Go(func() {
			for range each {
				if err := s.HostFunc(func() { ran[i].Add(1) }); err != nil {
					errs <- err
					return
				}
			}
			errs <- s.Sync(testenv.Context(t))
		})
	}
	testenv.MustBounded(t, "the streams' submissions", func() error { wg.Wait(); return nil })
	close(errs)
	for err := range errs {
		testenv.Must(t, err)
	}
	for i := range streams {
		if got := ran[i].Load(); got != each {
			t.Errorf("stream %d: %d of %d host functions ran", i, got, each)
		}
	}
	_, batched := cuda.HostEntries()
	t.Logf("records run beside another taken with them, so far: %d", batched)
}

// dispatcherAsleep makes sure that the dispatcher runs and sleeps, so
// that the next call wakes it and it reads GOMAXPROCS again: a graph
// holding a host function (destroyed at the test's end) keeps it from
// ending when idle, however slowly the test goes.
func dispatcherAsleep(t *testing.T, f *fixture) {
	t.Helper()
	g, err := f.s.Capture(func(s *cuda.Stream) error { return s.HostFunc(func() {}) })
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "g.Destroy", g.Destroy) })
	testenv.Must(t, f.s.HostFunc(func() {}))
	sync(t, f.s)
	testenv.Eventually(t, "the dispatcher sleeps", cuda.HostDispatcherSleeping)
}

// After a call, the dispatcher checks for the next one before it sleeps
// (with Ps to spare): a call made while it checks is taken without a
// wake-up, and its driver thread is not woken either. The check is made
// long here, so that the test does not depend on the machine's speed.
func TestHostFuncDispatcherChecksForTheNextCallBeforeItSleeps(t *testing.T) {
	f := newFixture(t)
	dispatcherAsleep(t, f)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer cuda.SetHostDispatcherSpin(time.Minute)()
	var ran atomic.Int32
	count := func() { ran.Add(1) }
	// The first call wakes the dispatcher, which reads GOMAXPROCS, then
	// checks for the next.
	testenv.Must(t, f.s.HostFunc(count))
	sync(t, f.s)
	testenv.Eventually(t, "the dispatcher checks for the next call", cuda.HostDispatcherSpinning)
	calls0, warm0, _ := cuda.HostHandoffs()
	spun0, _ := cuda.HostWakeHandoffs()
	const n = 20
	for range n {
		testenv.Must(t, f.s.HostFunc(count))
	}
	sync(t, f.s)
	calls, warm, _ := cuda.HostHandoffs()
	spun, _ := cuda.HostWakeHandoffs()
	if ran.Load() != n+1 || calls-calls0 != n {
		t.Fatalf("%d host functions ran, %d records taken; want %d, %d", ran.Load(), calls-calls0, n+1, n)
	}
	if warm-warm0 != n || spun != spun0 {
		t.Errorf("of %d calls made while the dispatcher checks, %d were taken without a wake-up and %d woke it; want all, none", n, warm-warm0, spun-spun0)
	}
	// Shorten the check again, so that the dispatcher can sleep and end.
	cuda.SetHostDispatcherSpin(cuda.HostWorkerSpin)
}

// With no Ps to spare (GOMAXPROCS below 4) the dispatcher does not check
// for the next call: it sleeps at once, and the next call wakes it, even
// with the check made long.
func TestHostFuncDispatcherDoesNotCheckWithoutPsToSpare(t *testing.T) {
	f := newFixture(t)
	var ran atomic.Int32
	count := func() { ran.Add(1) }
	dispatcherAsleep(t, f)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer cuda.SetHostDispatcherSpin(time.Minute)()
	testenv.Must(t, f.s.HostFunc(count)) // wakes it: it reads GOMAXPROCS
	sync(t, f.s)
	spun0, _ := cuda.HostWakeHandoffs()
	const n = 5
	for range n {
		testenv.Eventually(t, "the dispatcher sleeps", cuda.HostDispatcherSleeping)
		testenv.Must(t, f.s.HostFunc(count))
		sync(t, f.s)
	}
	if got := ran.Load(); got != n+1 {
		t.Fatalf("%d of %d host functions ran", got, n+1)
	}
	if spun, _ := cuda.HostWakeHandoffs(); spun-spun0 != n {
		t.Errorf("%d of %d calls woke the dispatcher; with GOMAXPROCS 2 it sleeps after each, so each should", spun-spun0, n)
	}
}
