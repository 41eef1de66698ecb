package cuda_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Host functions submitted with HostFuncOnDriverThread run on the driver's
// thread, in order, with no hand-off to a goroutine of package cuda's: the
// hand-off count does not move, the driver-thread count does. Captured
// into a graph, such a function runs at each launch the same way.
func TestHostFuncsOnTheDriverThreadRunInOrderWithoutAHandOff(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	calls0, _, _ := cuda.HostHandoffs()
	direct0 := cuda.HostFuncsOnDriverThread()
	var mu gosync.Mutex
	var got []int
	const n = 100
	for i := range n {
		testenv.Must(t, f.s.HostFuncOnDriverThread(func() {
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		}))
	}
	sync(t, f.s)
	mu.Lock()
	if len(got) != n || !slices.IsSorted(got) {
		t.Errorf("host functions ran as %v", got)
	}
	mu.Unlock()
	var launched atomic.Int32
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		return s.HostFuncOnDriverThread(func() { launched.Add(1) })
	})
	testenv.Must(t, err)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	for range 3 {
		testenv.Must(t, f.s.LaunchGraph(e))
	}
	sync(t, f.s)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	if got := launched.Load(); got != 3 {
		t.Errorf("the captured host function ran %d times in 3 launches", got)
	}
	calls, _, _ := cuda.HostHandoffs()
	if d := calls - calls0; d != 0 {
		t.Errorf("%d hand-offs to a worker, want none", d)
	}
	if d := cuda.HostFuncsOnDriverThread() - direct0; d != n+3 {
		t.Errorf("%d host functions ran on the driver's thread, want %d", d, n+3)
	}
}

// A panic in a host function run on the driver's thread is recovered
// there: the stream goes on, and its next Sync returns the failure, once,
// as HostFunc's.
func TestHostFuncOnTheDriverThreadPanicIsReportedBySync(t *testing.T) {
	failureIsReportedOnce(t, (*cuda.Stream).HostFuncOnDriverThread, func() { panic("boom") }, "panic", func(e *cuda.HostFuncError) bool {
		return !e.Goexit && e.Panic == "boom" && strings.Contains(string(e.Stack), "panic")
	})
}

// The guarantee HostFuncOnDriverThread does not give: a runtime.Goexit in
// its function cannot be stopped on the driver's thread, and the Go
// runtime ends the process, after a log line that names the cause (in a
// child process).
func TestHostFuncOnTheDriverThreadCallingGoexitEndsTheProcess(t *testing.T) {
	child, out, err := testenv.RunChild(t)
	if child {
		f := newFixture(t)
		testenv.Must(t, f.s.HostFuncOnDriverThread(runtime.Goexit))
		err := f.s.Sync(testenv.Context(t))
		fmt.Printf("the process lived; Sync: %v\n", err)
		return
	}
	defer func() {
		if t.Failed() {
			t.Logf("child process:\n%s", out)
		}
	}()
	childEnded(t, out, err, func(code int) bool { return code != 0 }, // ended by the runtime
		[]string{"called runtime.Goexit", "HostFuncOnDriverThread", "fatal error: runtime.Goexit called in a thread that was not created by the Go runtime"},
		"the process lived")
}

// A host function whose worker has parked (its spin over, as between the
// launches of a graph that takes a millisecond) wakes the worker, and the
// driver's thread checks for the result meanwhile instead of blocking at
// once, so that the hand-off costs one thread wake-up instead of two when
// the worker comes within the check's bound. Counted, not timed: every
// hand-off of spaced host functions is checked for by its caller, to a
// parked worker or (should the loaded machine have kept the worker from
// parking) a spinning one, and some to a parked one; how many returned
// without blocking depends on the machine, and is logged. Callers check
// only with Ps to spare: the test sets GOMAXPROCS to 4.
func TestHostFuncToAParkedWorkerHasTheDriverThreadCheckForTheResult(t *testing.T) {
	f := newFixture(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var ran atomic.Int64
	count := func() { ran.Add(1) }
	testenv.Must(t, f.s.HostFunc(count)) // a worker that has read GOMAXPROCS 4
	sync(t, f.s)
	calls0, warm0, _ := cuda.HostHandoffs()
	spun0, woken0 := cuda.HostWakeHandoffs()
	const n = 30
	for range n {
		time.Sleep(2 * time.Millisecond) // the worker's spin is 50µs
		testenv.Must(t, f.s.HostFunc(count))
		sync(t, f.s)
	}
	if got := ran.Load(); got != n+1 {
		t.Fatalf("%d of %d host functions ran", got, n+1)
	}
	calls, warm, _ := cuda.HostHandoffs()
	spun, woken := cuda.HostWakeHandoffs()
	calls, warm, spun, woken = calls-calls0, warm-warm0, spun-spun0, woken-woken0
	t.Logf("%d hand-offs: %d to a spinning worker; %d to a parked one checked for, %d of them returned without the caller blocking", calls, warm, spun, woken)
	if calls != n || spun+warm != n || spun == 0 {
		t.Errorf("%d hand-offs, %d to a spinning worker, %d to a parked one checked for by the driver's thread; want %d, all checked for, some parked", calls, warm, spun, n)
	}
}
