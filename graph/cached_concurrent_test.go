package graph_test

import (
	"context"
	"errors"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// runProbe is what the Cached.Runs of TestConcurrentCachedRunsReleaseEachLeaseOnceAfterItsLaunch
// lease: each run's release counts, and notes the word that its run's
// launch copies into pinned host memory. A run whose word is there in the
// end was launched; if its release found the word missing, the lease was
// released while the launch that uses it could still run.
type runProbe struct {
	leased   []atomic.Bool  // Lease accepted the run's function
	released []atomic.Int32 // times the run's function ran
	sawWord  []atomic.Int32 // the word at the first release, +1 (0: not released)
	host     []int32        // pinned; the run's launch copies 1 into its word
	next     atomic.Int32
}

var errCaptureFails = errors.New("the captured function fails on purpose")

// run makes one Cached.Run on s whose capture leases a function of its
// own and copies one into the run's word of host; a run whose number is
// 3 modulo 7 fails midway through its capture (nothing is launched and
// the lease goes at once). It returns the run's error, errCaptureFails
// for those that fail on purpose.
func (p *runProbe) run(c *graph.Cached, s libcuda.Stream, one libcuda.Deviceptr) error {
	k := int(p.next.Add(1)) - 1
	fail := k%7 == 3
	err := c.Run(s, func(s libcuda.Stream) error {
		ok := graph.Lease(s, func() {
			if p.released[k].Add(1) == 1 {
				p.sawWord[k].Store(atomic.LoadInt32(&p.host[k]) + 1)
			}
		})
		if !ok {
			return errors.New("Lease refused on the capturing stream")
		}
		p.leased[k].Store(true)
		if err := libcuda.MemcpyDtoHAsync(unsafe.Pointer(&p.host[k]), one, 4, s); err != nil {
			return err
		}
		if fail {
			return errCaptureFails
		}
		return nil
	})
	if fail && errors.Is(err, errCaptureFails) {
		return errCaptureFails
	}
	return err
}

// Cached.Run on one Cached from several goroutines at once: the runs are
// serialized, so that each capture has the Cached's capture record to
// itself and each lease goes to its own capture. Every lease is released
// exactly once, and never before the launch of its run has finished: not
// while the stream is held (the updates must hand the leases to the
// background), not when the runs wait for each other (the updates release
// them at once), nor when Close races the runs. Leases of captures that
// fail midway go at once.
func TestConcurrentCachedRunsReleaseEachLeaseOnceAfterItsLaunch(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	const goroutines, held, waited, racing = 4, 10, 15, 20
	total := goroutines * (held + waited + racing)
	s := testenv.NewStream(t)
	one := deviceInts(t, 1)
	testenv.Must(t, libcuda.MemsetD32(one, 1, 1))
	p := &runProbe{
		leased:   make([]atomic.Bool, total),
		released: make([]atomic.Int32, total),
		sawWord:  make([]atomic.Int32, total),
		host:     pinnedInts(t, total),
	}
	c := graph.NewCached(graph.DefaultMode)
	gt := testenv.NewGate(t)

	// Runs from several goroutines, each checked for its own errors;
	// the returned function waits for them.
	start := func(what string, runs int, each func() error) (wait func()) {
		errs := make(chan error, goroutines*runs)
		done := make([]<-chan struct{}, goroutines)
		for g := range goroutines {
			done[g] = testenv.Go(func() {
				for range runs {
					if err := each(); err != nil && !errors.Is(err, errCaptureFails) {
						errs <- err
					}
				}
			})
		}
		return func() {
			t.Helper()
			for _, d := range done {
				testenv.Recv(t, d, what)
			}
			close(errs)
			for err := range errs {
				t.Errorf("%s: %v", what, err)
			}
		}
	}
	concurrently := func(what string, runs int, each func() error) {
		t.Helper()
		start(what, runs, each)()
	}

	// The stream held: no launch can finish, so no lease of a run that
	// launched can be released.
	gt.Hold(t, s)
	concurrently("runs behind the gate", held, func() error { return p.run(c, s, one) })
	for k := range goroutines * held {
		if k%7 != 3 && p.released[k].Load() != 0 {
			t.Fatalf("run %d's lease was released while its launch was held", k)
		}
	}
	gt.Open()

	// Each goroutine waits for its run: the updates find the runs before
	// them finished and release their leases on the spot. A run and its
	// wait go together: a wait on the stream while another goroutine
	// begins capturing it is the caller's race (the wait may find the
	// stream idle and then query it in the capture, which breaks it).
	var waits gosync.Mutex
	concurrently("runs that wait", waited, func() error {
		waits.Lock()
		defer waits.Unlock()
		if err := p.run(c, s, one); err != nil {
			return err
		}
		return sync.Stream(context.Background(), cu, s)
	})

	// Close races the runs: those after it are refused.
	before := int32(goroutines * (held + waited))
	half := make(chan struct{})
	var halfOnce gosync.Once
	wait := start("runs racing Close", racing, func() error {
		err := p.run(c, s, one)
		if p.next.Load() >= before+goroutines*racing/2 {
			halfOnce.Do(func() { close(half) })
		}
		if errors.Is(err, graph.ErrDestroyed) {
			return nil
		}
		return err
	})
	testenv.Recv(t, half, "half the runs racing Close")
	testenv.MustBounded(t, "c.Close", c.Close)
	wait()
	if err := testenv.BoundedErr(t, "c.Close", c.Close); !errors.Is(err, graph.ErrDestroyed) {
		t.Fatalf("second Close = %v, want ErrDestroyed", err)
	}
	testenv.Must(t, sync.Stream(testenv.Context(t), cu, s))
	drained(t)

	leased := 0
	for k := range total {
		want := int32(0)
		if p.leased[k].Load() {
			want = 1
			leased++
		}
		if got := p.released[k].Load(); got != want {
			t.Errorf("run %d (leased: %v): its lease was released %d times, want %d", k, p.leased[k].Load(), got, want)
		}
	}
	for k := range total {
		if atomic.LoadInt32(&p.host[k]) == 1 && p.sawWord[k].Load() == 1 {
			t.Errorf("run %d's lease was released before its launch had run", k)
		}
	}
	if leased < goroutines*(held+waited) {
		t.Fatalf("%d runs leased, want at least the %d before the race with Close", leased, goroutines*(held+waited))
	}
}

// Cached.Run updates the executable graph, queries its tracking event and
// destroys the captured graph in the thread's own capture mode when no
// capture is in progress (the default mode, global, here). A global
// capture that another goroutine begins at the same moment must neither
// see those calls (they are potentially unsafe: the driver would
// invalidate it) nor wait for ever: sync's registry admits the capture
// only once the calls in flight are done, and later calls go relaxed.
func TestCachedRunsInTheThreadsModeBreakNoGlobalCaptureBeginningMeanwhile(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	k := loadGraphKernels(t)
	const n, captures, minRuns = 64, 100, 100
	captured, runs := testenv.NewStream(t), testenv.NewStream(t)
	a, b := deviceInts(t, n), deviceInts(t, n)
	host := pinnedInts(t, n)
	var leased counter
	c := graph.NewCached(graph.DefaultMode)
	var stop atomic.Bool
	var runErr error
	var ran atomic.Int32
	runner := testenv.Go(func() {
		defer func() { runErr = errors.Join(runErr, c.Close()) }()
		for v := int32(1); !stop.Load(); v++ {
			err := c.Run(runs, func(s libcuda.Stream) error {
				graph.Lease(s, leased.release)
				return k.fillAdd(s, b, n, v, 0)
			})
			if err == nil {
				// A wait of package sync: guarded as the update is.
				err = sync.Stream(context.Background(), cu, runs)
			}
			if err != nil {
				runErr = err
				return
			}
			ran.Add(1)
		}
	})
	// Capture until both sides have done enough, within testenv.Timeout.
	deadline := time.Now().Add(testenv.Timeout)
	for i := 0; i < captures || (ran.Load() < minRuns && time.Now().Before(deadline)); i++ {
		g, err := graph.Capture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			return k.fillAdd(s, a, n, int32(i), 1)
		})
		if err != nil {
			stop.Store(true)
			testenv.Recv(t, runner, "the runs")
			t.Fatalf("global capture %d while another goroutine runs a Cached (%d runs): %v", i, ran.Load(), err)
		}
		testenv.MustBounded(t, "g.Destroy", g.Destroy)
	}
	stop.Store(true)
	testenv.Recv(t, runner, "the runs")
	testenv.Must(t, runErr)
	if ran.Load() < minRuns {
		t.Fatalf("%d runs made during the captures, want at least %d", ran.Load(), minRuns)
	}
	checkInts(t, "after the runs", runs, b, host, ran.Load())
	drained(t)
	if got := int32(leased.get()); got != ran.Load() {
		t.Fatalf("%d leases released after Close, want %d", got, ran.Load())
	}
}
