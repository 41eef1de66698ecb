package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestNewStreamOptions(t *testing.T) {
	f := newFixture(t)
	least, greatest, err := f.ctx.StreamPriorities()
	testenv.Must(t, err)
	if greatest > least {
		t.Fatalf("priorities: least %d, greatest %d", least, greatest)
	}
	s := newStream(t, f.ctx, cuda.NonBlocking(), cuda.Priority(greatest))
	var flags uint32
	var prio int32
	testenv.Must(t, libcuda.StreamGetFlags(s.Raw(), &flags))
	testenv.Must(t, libcuda.StreamGetPriority(s.Raw(), &prio))
	if flags&uint32(libcuda.CU_STREAM_NON_BLOCKING) == 0 || int(prio) != greatest {
		t.Errorf("flags %#x priority %d, want non-blocking and %d", flags, prio, greatest)
	}
}

func TestStreamUseAfterCloseIsAnError(t *testing.T) {
	f := newFixture(t)
	s := newStream(t, f.ctx)
	testenv.MustBounded(t, "s.Close", s.Close)
	for name, err := range map[string]error{
		"Close":    s.Close(),
		"Sync":     s.Sync(context.Background()),
		"HostFunc": s.HostFunc(func() {}),
		"Memset":   cuda.Memset(s, alloc(t, f.s, []int32{1}), 0),
	} {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if _, err := s.Record(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Record after Close: %v, want ErrClosed", err)
	}
	if _, err := cuda.Alloc[int32](s, 1); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Alloc after Close: %v, want ErrClosed", err)
	}
	var nilStream *cuda.Stream
	if err := nilStream.Sync(context.Background()); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Sync of a nil stream: %v, want ErrNil", err)
	}
}

// A stream held by a gate: its event is not complete, and a stream waiting
// for the event does not run until the gate opens.
func TestEventsOrderStreams(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	gate := testenv.NewGate(t)
	s1, s2 := newStream(t, f.ctx, cuda.NonBlocking()), newStream(t, f.ctx, cuda.NonBlocking())
	start, err := s1.Record()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "start.Close", start.Close)
	gate.Hold(t, s1.Raw())
	ev, err := s1.Record()
	testenv.Must(t, err)
	defer ev.Close()
	testenv.MustBounded(t, "s2.Wait", func() error { return s2.Wait(ev) })
	ran := make(chan struct{})
	testenv.Must(t, s2.HostFunc(func() { close(ran) }))

	done, err := ev.Query()
	testenv.Must(t, err)
	if done {
		t.Fatal("the event of a held stream is complete")
	}
	select {
	case <-ran:
		t.Fatal("the waiting stream ran before the event")
	default:
	}
	gate.Open()
	testenv.Recv(t, ran, "the waiting stream's host function")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.MustBounded(t, "ev.Sync", func() error { return ev.Sync(ctx) })
	done, err = ev.Query()
	testenv.Must(t, err)
	if !done {
		t.Error("Query after Sync: not done")
	}
	d, err := cuda.Elapsed(start, ev)
	testenv.Must(t, err)
	if d < 0 {
		t.Errorf("Elapsed = %v", d)
	}
	testenv.MustBounded(t, "ev.Close", ev.Close)
	if _, err := ev.Query(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Query after Close: %v, want ErrClosed", err)
	}
	if err := testenv.BoundedErr(t, "s2.Wait", func() error { return s2.Wait(ev) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Wait for a closed event: %v, want ErrClosed", err)
	}
}

func TestHostFuncsRunInOrder(t *testing.T) {
	f := newFixture(t)
	var mu gosync.Mutex
	var got []int
	for i := range 100 {
		testenv.Must(t, f.s.HostFunc(func() {
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		}))
	}
	sync(t, f.s)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 100 || !slices.IsSorted(got) {
		t.Errorf("host functions ran as %v", got)
	}
}

// Host functions run on workers that outlive their calls: a hundred of
// them, each waited for before the next, run on a few goroutines, not on
// a goroutine each; a panic keeps its worker, a Goexit ends only its own.
// Idle workers end after a while.
func TestHostFuncsReuseTheirGoroutines(t *testing.T) {
	f := newFixture(t)
	var mu gosync.Mutex
	ids := map[string]int{}
	record := func() {
		buf := make([]byte, 64)
		id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
		mu.Lock()
		ids[id]++
		mu.Unlock()
	}
	const n = 100
	for i := range n {
		testenv.Must(t, f.s.HostFunc(record))
		switch i {
		case 40:
			testenv.Must(t, f.s.HostFunc(func() { panic("boom") }))
		case 70:
			testenv.Must(t, f.s.HostFunc(runtime.Goexit))
		}
		if err := f.s.Sync(testenv.Context(t)); err != nil && (i != 40 && i != 70 || !errors.Is(err, cuda.ErrHostFunc)) {
			t.Fatalf("Sync after host function %d: %v", i, err)
		}
	}
	mu.Lock()
	distinct := len(ids)
	mu.Unlock()
	// One worker normally, and one more after the Goexit; a loaded
	// machine may let one sit idle past its time now and then.
	if distinct > n/4 {
		t.Errorf("%d host functions ran on %d goroutines, want a few", n, distinct)
	}
	testenv.Eventually(t, "the idle host workers end", func() bool { return cuda.HostWorkersIdle() == 0 })
}

// Back-to-back host functions find their worker still checking for its
// next call, and the driver's thread gets the result without blocking:
// the hand-off costs no OS thread wake-up. Counted, not timed: with a few
// hundred in a row, some hand-offs take the fast path even on a loaded
// machine. Workers spin only with Ps to spare: the test sets
// GOMAXPROCS to 4 (the 2-core CI machine has 2).
func TestBackToBackHostFuncsAreHandedOffWithoutBlocking(t *testing.T) {
	f := newFixture(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	calls0, warm0, unblocked0 := cuda.HostHandoffs()
	const n = 300
	var ran atomic.Int64
	for range n {
		testenv.Must(t, f.s.HostFunc(func() { ran.Add(1) }))
	}
	testenv.MustBounded(t, "f.s.Sync", func() error { return f.s.Sync(testenv.Context(t)) })
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d host functions ran", got, n)
	}
	calls, warm, unblocked := cuda.HostHandoffs()
	calls, warm, unblocked = calls-calls0, warm-warm0, unblocked-unblocked0
	t.Logf("%d hand-offs: %d to a spinning worker, %d without the caller blocking", calls, warm, unblocked)
	if calls < n {
		t.Errorf("%d hand-offs counted, want at least %d", calls, n)
	}
	if warm == 0 || unblocked == 0 {
		t.Errorf("of %d back-to-back host functions, %d were taken by a spinning worker and %d returned without blocking the driver's thread; want some of each", n, warm, unblocked)
	}
}

// Host functions share one callback: many more of them than purego's
// callback limit (2000) run, and leave nothing in the table.
func TestManyHostFuncs(t *testing.T) {
	f := newFixture(t)
	n := 200_000 // 100 times the callback limit
	if testing.Short() || raceEnabled {
		n = 50_000 // still 25 times the callback limit
	}
	before := cuda.HostFuncsPending()
	var count atomic.Int64
	inc := func() { count.Add(1) }
	for i := range n {
		if err := f.s.HostFunc(inc); err != nil {
			t.Fatalf("host function %d: %v", i, err)
		}
		if i%4096 == 4095 {
			sync(t, f.s)
		}
	}
	sync(t, f.s)
	if c := count.Load(); c != int64(n) {
		t.Errorf("%d host functions ran, want %d", c, n)
	}
	if p := cuda.HostFuncsPending(); p != before {
		t.Errorf("%d host functions pending, want %d", p, before)
	}
}

// A host function that panics or calls runtime.Goexit (as t.Fatal does)
// ends its own goroutine only: the process and the stream go on, and the
// stream's next Sync returns the failure, once, without logging it.
func TestHostFuncPanicOrGoexitIsReportedBySync(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		want func(*cuda.HostFuncError) bool
	}{
		{"panic", func() { panic("boom") }, func(e *cuda.HostFuncError) bool {
			return !e.Goexit && e.Panic == "boom" && strings.Contains(string(e.Stack), "panic")
		}},
		{"Goexit", runtime.Goexit, func(e *cuda.HostFuncError) bool { return e.Goexit && e.Panic == nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			failureIsReportedOnce(t, (*cuda.Stream).HostFunc, c.f, c.name, c.want)
		})
	}
}

// failureIsReportedOnce submits fail, then a host function that notes it
// ran, with submit on a new fixture's stream, and checks that the stream
// goes on: the second function runs, the next Sync returns fail's
// HostFuncError (what says it is what, name), the Sync after returns nil,
// and the stream copies as before. Nothing is logged.
func failureIsReportedOnce(t *testing.T, submit func(*cuda.Stream, func()) error, fail func(), what string, want func(*cuda.HostFuncError) bool) {
	t.Helper()
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	var after atomic.Bool
	testenv.Must(t, submit(f.s, fail))
	testenv.Must(t, submit(f.s, func() { after.Store(true) }))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	err := f.s.Sync(ctx)
	var he *cuda.HostFuncError
	if !errors.Is(err, cuda.ErrHostFunc) || !errors.As(err, &he) || !want(he) {
		t.Fatalf("Sync after the host function: %v (%+v), want its %s", err, he, what)
	}
	if !after.Load() {
		t.Error("the host function after the failed one did not run")
	}
	sync(t, f.s) // reported once
	x := alloc(t, f.s, []int32{1, 2})
	if got := read(t, f.s, x); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("the stream after the failure: %v", got)
	}
}

// childEnded checks how a child process of testenv.RunChild ended: its
// exit status (exitOK says which are right), the texts its output must
// hold, and one it must not (never).
func childEnded(t *testing.T, out string, err error, exitOK func(code int) bool, want []string, never string) {
	t.Helper()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Errorf("the child did not run to an exit: %v", err)
	}
	if !exitOK(code) {
		t.Errorf("the child ended with %v (status %d)", err, code)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the child's output lacks %q", w)
		}
	}
	if strings.Contains(out, never) {
		t.Errorf("the child's output holds %q", never)
	}
}

// A t.Fatal in a host function fails its test and nothing more: the test
// binary lives and goes on (in a child process, whose failure is the
// expected outcome).
func TestHostFuncCallingTFatalFailsOnlyItsTest(t *testing.T) {
	child, out, err := testenv.RunChild(t)
	if child {
		f := newFixture(t)
		testenv.Must(t, f.s.HostFunc(func() { t.Fatal("t.Fatal in a host function") }))
		err := f.s.Sync(testenv.Context(t))
		fmt.Printf("the process lived; Sync reported the host function: %v\n", errors.Is(err, cuda.ErrHostFunc))
		return
	}
	t.Logf("child process:\n%s", out)
	childEnded(t, out, err, func(code int) bool { return code == 1 }, // a failed test
		[]string{"t.Fatal in a host function", "the process lived; Sync reported the host function: true", "--- FAIL: " + t.Name()},
		"fatal error")
}

// Failures that no Sync can report are logged: a second one before a
// Sync, and one after the stream was closed.
func TestHostFuncFailuresNoSyncReportsAreLogged(t *testing.T) {
	f := newFixture(t)
	log := testenv.CaptureErrors(t)
	s := newStream(t, f.ctx)
	testenv.Must(t, s.HostFunc(func() { panic("first") }))
	testenv.Must(t, s.HostFunc(func() { panic("second") }))
	if err := s.Sync(testenv.Context(t)); err == nil || !strings.Contains(err.Error(), "first") {
		t.Errorf("Sync: %v, want the first panic", err)
	}
	ran := make(chan struct{})
	testenv.Must(t, s.HostFunc(func() { defer close(ran); panic("third") }))
	testenv.MustBounded(t, "s.Close", s.Close)
	testenv.Recv(t, ran, "the host function after Close")
	testenv.Eventually(t, "the logs", func() bool { return len(log.Messages()) >= 2 })
	msgs := strings.Join(log.Messages(), "\n")
	if len(log.Messages()) != 2 || !strings.Contains(msgs, "second") || !strings.Contains(msgs, "third") {
		t.Errorf("logged %q, want the second and the third panic", log.Messages())
	}
}

// A function of RunCached that panics leaves the calling thread as it
// found it: its own context current again.
func TestRunCachedPanicRestoresTheThread(t *testing.T) {
	f := newFixture(t)
	other := otherContext(t, f)
	c := graph.NewCached(graph.DefaultMode)
	defer testenv.MustBounded(t, "c.Close", c.Close)
	th := testenv.NewOSThread(t, other)
	th.Do(func() {
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v, want the function's panic", r)
				}
			}()
			_ = f.s.RunCached(c, func(*cuda.Stream) error { panic("boom") })
		}()
		var cur libcuda.Context
		testenv.Must(t, libcuda.CtxGetCurrent(&cur))
		if cur != other {
			t.Errorf("after the panic the thread has %#x current, want its own %#x", cur, other)
		}
		testenv.Must(t, libcuda.CtxSetCurrent(0)) // before other is destroyed
	})
	// The stream is no longer captured.
	x := alloc(t, f.s, []int32{5})
	if got := read(t, f.s, x); got[0] != 5 {
		t.Errorf("the stream after the panic: %v", got)
	}
}

// A graph captured from a stream replays its kernels and host functions
// at each launch; the host function stays in the table while the graph
// lives.
func TestCaptureLaunchesAndHostFuncs(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2, 3})
	y := alloc(t, f.s, []float32{0, 0, 0})
	saxpy := f.fn(t, "saxpy")
	before := cuda.HostFuncsPending()
	var calls atomic.Int64
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		if err := s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Int32(3), cuda.Float32(1), x.Arg(), y.Arg()); err != nil {
			return err
		}
		if err := testenv.BoundedErr(t, "s.Close", s.Close); !errors.Is(err, cuda.ErrCapturing) {
			t.Errorf("Close during the capture: %v, want ErrCapturing", err)
		}
		return s.HostFunc(func() { calls.Add(1) })
	})
	testenv.Must(t, err)
	if got := read(t, f.s, y); !slices.Equal(got, []float32{0, 0, 0}) {
		t.Fatalf("the capture ran its work: %v", got)
	}
	exec, err := g.Instantiate()
	testenv.Must(t, err)
	for range 3 {
		testenv.Must(t, f.s.LaunchGraph(exec))
	}
	sync(t, f.s)
	if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 6, 9}) {
		t.Errorf("after 3 launches y = %v", got)
	}
	if c := calls.Load(); c != 3 {
		t.Errorf("the captured host function ran %d times, want 3", c)
	}
	if p := cuda.HostFuncsPending(); p != before+1 {
		t.Errorf("%d host functions pending while the graph lives, want %d", p, before+1)
	}
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.MustBounded(t, "exec.Destroy", exec.Destroy)
	testenv.Eventually(t, "the captured host function to leave the table", func() bool {
		return cuda.HostFuncsPending() == before
	})
}

func TestRunCached(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 1})
	y := alloc(t, f.s, []float32{0, 0})
	saxpy := f.fn(t, "saxpy")
	c := graph.NewCached(graph.DefaultMode)
	defer testenv.MustBounded(t, "c.Close", c.Close)
	for i := range 4 {
		err := f.s.RunCached(c, func(s *cuda.Stream) error {
			return s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Int32(2), cuda.Float32(float32(i)), x.Arg(), y.Arg())
		})
		testenv.Must(t, err)
	}
	if got := read(t, f.s, y); !slices.Equal(got, []float32{6, 6}) {
		t.Errorf("y = %v, want 0+1+2+3", got)
	}
}

// Frees of Slices used on two streams in opposite orders, beside Closes of
// both streams, all at once: none waits for another in a circle.
func TestCrossedFreesAndClosesFinish(t *testing.T) {
	f := newFixture(t)
	add := f.fn(t, "add_one_i32")
	for range 50 {
		a, err := f.ctx.NewStream()
		testenv.Must(t, err)
		b, err := f.ctx.NewStream()
		testenv.Must(t, err)
		x, err := cuda.Alloc[int32](a, 64)
		testenv.Must(t, err)
		y, err := cuda.Alloc[int32](b, 64)
		testenv.Must(t, err)
		testenv.MustBounded(t, "b.Wait", func() error { return b.Wait(mustRecord(t, a)) })
		testenv.MustBounded(t, "a.Wait", func() error { return a.Wait(mustRecord(t, b)) })
		testenv.Must(t, b.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(64, 1, 1), x.Arg(), cuda.Uint64(64)))
		testenv.Must(t, a.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(64, 1, 1), y.Arg(), cuda.Uint64(64)))
		var wg gosync.WaitGroup
		for _, op := range []func() error{x.Free, y.Free, a.Close, b.Close} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := op(); err != nil {
					t.Error(err)
				}
			}()
		}
		testenv.Recv(t, testenv.Go(wg.Wait), "the Frees and Closes")
	}
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
}

func mustRecord(t *testing.T, s *cuda.Stream) *cuda.Event {
	t.Helper()
	ev, err := s.Record()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ev.Close", ev.Close) })
	return ev
}
