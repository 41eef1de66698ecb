package sync_test

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// toPoller goes to the shared poller after the first query: its spinning
// budgets are over before its first spin.
var toPoller = sync.Policy{Mode: sync.Polling, Spin: 1, Yield: 1}

// counter holds streams on a word of mapped host memory that the test
// raises step by step: a stream held at step k goes on once the word
// reaches k (the comparison is cyclic, as the driver's: the word stays
// below 2^31). A gate holds once: its word goes from 0 to 1.
type counter struct {
	word *uint32
	dev  libcuda.Deviceptr
}

func newCounter(t *testing.T) *counter {
	t.Helper()
	var host unsafe.Pointer
	testenv.Must(t, libcuda.MemHostAlloc(&host, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP|libcuda.CU_MEMHOSTALLOC_PORTABLE)))
	c := &counter{word: (*uint32)(host)}
	atomic.StoreUint32(c.word, 0)
	testenv.Must(t, libcuda.MemHostGetDevicePointer(&c.dev, host, 0))
	t.Cleanup(func() {
		c.reach(math.MaxInt32)
		if err := libcuda.MemFreeHost(host); err != nil {
			t.Errorf("cuMemFreeHost: %v", err)
		}
	})
	return c
}

// hold makes s wait until the word reaches k. When the test ends, the
// word goes to its largest value before the cleanups registered so far
// run (they may wait for s; cuMemFreeHost waits for every stream).
func (c *counter) hold(t *testing.T, s libcuda.Stream, k uint32) {
	t.Helper()
	testenv.Must(t, libcuda.StreamWaitValue32(s, c.dev, k, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	t.Cleanup(func() { c.reach(math.MaxInt32) })
}

// reach lets the streams held up to step k go on.
func (c *counter) reach(k uint32) { atomic.StoreUint32(c.word, k) }

// A wait that arrives on the poller as it stops (its last wait has just
// ended) is not lost: the poller either takes it in before it stops or a
// new one starts for it. Many rounds of one wait ending as the next one
// arrives; each must return once its work ends.
func TestWaitArrivingAsThePollerStopsIsServed(t *testing.T) {
	testenv.OnPrimary(t, 0)
	c := newCounter(t)
	first, second := testenv.NewStream(t), testenv.NewStream(t)
	var ev [2]libcuda.Event
	for i := range ev {
		testenv.Must(t, libcuda.EventCreate(&ev[i], uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
		t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(ev[i])) })
	}
	b := takeBaseline(t)
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	ctx := testenv.Context(t)
	r0, _ := sync.PollerCounts()
	for i := range uint32(rounds) {
		c.hold(t, first, 2*i+1)
		testenv.Must(t, libcuda.EventRecord(ev[0], first))
		c.hold(t, second, 2*i+2)
		testenv.Must(t, libcuda.EventRecord(ev[1], second))
		a := testenv.WaitAsync(func() error { return toPoller.Event(ctx, ev[0]) })
		testenv.Eventually(t, "the first wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
		// The first wait's work ends while the second wait goes to the
		// poller: the poller finds no wait left about when the second
		// arrives.
		start := make(chan struct{})
		opened := testenv.Go(func() { <-start; c.reach(2*i + 1) })
		bres := testenv.WaitAsync(func() error { <-start; return toPoller.Event(ctx, ev[1]) })
		close(start)
		testenv.Recv(t, opened, "the first hold to open")
		if err := testenv.Recv(t, a, fmt.Sprintf("round %d: the first wait", i)); err != nil {
			t.Fatalf("round %d: the first wait: %v", i, err)
		}
		testenv.Eventually(t, "the second wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
		c.reach(2*i + 2)
		if err := testenv.Recv(t, bres, fmt.Sprintf("round %d: the wait that arrived as the poller stopped", i)); err != nil {
			t.Fatalf("round %d: the second wait: %v", i, err)
		}
	}
	r1, _ := sync.PollerCounts()
	t.Logf("%d rounds of the poller for %d pairs of waits", r1-r0, rounds)
	b.back(t)
}

// With GOMAXPROCS changed at run time (down to 1, then up), in both
// directions away from the value a wait read last: waits on idle and on
// busy targets, from more goroutines than GOMAXPROCS, all return nil (the
// query limit's refusal never reaches a caller), and nothing stays
// behind.
func TestWaitsAcrossGOMAXPROCSChanges(t *testing.T) {
	testenv.OnPrimary(t, 0)
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	idle := testenv.NewStream(t)
	c := newCounter(t)
	busy := make([]libcuda.Stream, 4)
	for i := range busy {
		busy[i] = testenv.NewStream(t)
	}
	var done libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&done, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(done)) })
	testenv.Must(t, libcuda.EventRecord(done, idle))
	testenv.Must(t, libcuda.StreamSynchronize(idle))
	b := takeBaseline(t)
	ctx := testenv.Context(t)
	policies := []sync.Policy{{Mode: sync.Auto}, {Mode: sync.Blocking}, {Mode: sync.Polling}, toPoller}
	for step, procs := range []int{1, 4, 1, 2 * orig, orig} {
		runtime.GOMAXPROCS(procs)
		// Idle: 8 goroutines a mode, each many waits.
		var idleWaits []<-chan error
		for _, p := range policies {
			for range 8 {
				idleWaits = append(idleWaits, testenv.WaitAsync(func() error {
					for range 50 {
						if err := p.Stream(ctx, 0, idle); err != nil {
							return fmt.Errorf("%v stream: %w", p.Mode, err)
						}
						if err := p.Event(ctx, done); err != nil {
							return fmt.Errorf("%v event: %w", p.Mode, err)
						}
					}
					return nil
				}))
			}
		}
		// Busy: every mode on every held stream.
		k := uint32(step + 1)
		for _, s := range busy {
			c.hold(t, s, k)
		}
		var busyWaits []<-chan error
		for _, p := range policies {
			for _, s := range busy {
				busyWaits = append(busyWaits, testenv.WaitAsync(func() error { return p.Stream(ctx, 0, s) }))
			}
		}
		for i, ch := range idleWaits {
			if err := testenv.Recv(t, ch, "idle waits"); err != nil {
				t.Fatalf("GOMAXPROCS %d, idle waiter %d: %v", procs, i, err)
			}
		}
		c.reach(k)
		for i, ch := range busyWaits {
			if err := testenv.Recv(t, ch, "busy waits"); err != nil {
				t.Fatalf("GOMAXPROCS %d, busy wait %d: %v", procs, i, err)
			}
		}
		if err := (sync.Policy{Mode: sync.Polling}).Stream(ctx, 0, idle); err != nil {
			t.Fatalf("GOMAXPROCS %d: idle wait after the busy ones: %v", procs, err)
		}
	}
	runtime.GOMAXPROCS(orig)
	b.back(t)
}

// Global-mode captures begin and end, one after another, while the shared
// poller goes on querying held streams: each StartCapture waits for a
// poller query in flight in the caller's mode, the queries made while a
// capture is admitted run relaxed, and no capture is invalidated (the
// simulator, like the driver, invalidates a global capture when another
// thread makes a potentially unsafe call in global mode during it).
func TestCapturesBeginWhileThePollerQueries(t *testing.T) {
	testenv.OnPrimary(t, 0)
	dev := deviceInts(t, 16)
	c := newCounter(t)
	streams := make([]libcuda.Stream, 20)
	for i := range streams {
		streams[i] = testenv.NewStream(t)
		c.hold(t, streams[i], 1)
	}
	captured := testenv.NewStream(t)
	b := takeBaseline(t)
	invalidated, sim := testenv.Stat(t, "captures_invalidated")
	res := startWaits(toPoller, streams, nil)
	testenv.Eventually(t, "every wait on the poller", func() bool { return sync.ReadStats().PolledWaits == len(streams) })
	captures := 200
	if testing.Short() {
		captures = 50
	}
	r0, _ := sync.PollerCounts()
	for i := range captures {
		entry := sync.StartCapture()
		err := libcuda.StreamBeginCapture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL)
		if err == nil {
			err = libcuda.MemsetD8Async(dev, 1, 64, captured)
			// Give the poller a round inside the capture now and then.
			if i%10 == 0 {
				r, _ := sync.PollerCounts()
				testenv.Eventually(t, "a poller round during the capture", func() bool {
					n, _ := sync.PollerCounts()
					return n > r+1 || sync.ReadStats().PolledWaits != len(streams)
				})
			}
			var g libcuda.Graph
			if eerr := libcuda.StreamEndCapture(captured, &g); eerr != nil {
				err = fmt.Errorf("cuStreamEndCapture: %w", eerr)
			}
			if g != 0 {
				testenv.Must(t, libcuda.GraphDestroy(g))
			} else if err == nil {
				err = fmt.Errorf("no graph")
			}
		}
		entry.End()
		if err != nil {
			t.Fatalf("capture %d beside the poller: %v", i, err)
		}
		if sync.ReadStats().PolledWaits != len(streams) {
			t.Fatalf("capture %d: %+v; the held waits must stay on the poller", i, sync.ReadStats())
		}
	}
	r1, _ := sync.PollerCounts()
	c.reach(1)
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d after the captures", i)); err != nil {
			t.Fatalf("wait %d after the captures: %v", i, err)
		}
	}
	if n, _ := testenv.Stat(t, "captures_invalidated"); sim && n != invalidated {
		t.Fatalf("%d captures invalidated beside the poller", n-invalidated)
	}
	t.Logf("%d captures, %d poller rounds meanwhile", captures, r1-r0)
	b.back(t)
}
