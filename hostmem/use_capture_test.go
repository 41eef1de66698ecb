package hostmem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// A buffer Use()d in the captures of a Cached is released from each run's
// lease by the next run's update, before that Run returns, when the run
// before has finished (as in a loop that waits for each run): once the
// buffer is freed, its registration is retired by the first run that no
// longer uses it, with nothing in the background to wait for.
func TestUseInCachedRunIsReleasedByTheNextUpdate(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	d := memtest.DeviceInt64(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]int64, 512))
	testenv.Must(t, err)
	c := graph.NewCached(graph.DefaultMode)
	run := func(use bool) {
		t.Helper()
		testenv.Must(t, c.Run(s, func(s libcuda.Stream) error {
			if err := libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, s); err != nil {
				return err
			}
			if use {
				return b.Use(s)
			}
			return nil
		}))
		testenv.Must(t, libcuda.StreamSynchronize(s))
	}
	for range 3 {
		run(true)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.DrainReleases(t) // the buffer's own release: the last run's lease holds its registration
	if st := hostmem.ReadStats(); st.Registrations != 1 || st.Retired != 0 {
		t.Fatalf("with the last run's lease alive: %+v, want its registration in use", st)
	}
	// The memory is still the graph's (a run that copies into it, without
	// its Use): only an update that replaces the leasing run releases it.
	run(false)
	if st := hostmem.ReadStats(); st.Retired != 1 {
		t.Fatalf("when the run after the last Use returned: %+v, want its registration retired", st)
	}
	testenv.MustBounded(t, "c.Close", c.Close)
	memtest.Drain(t)
}

// A Use on a stream that no capture takes in, made while another
// goroutine captures through package graph, records an event as outside
// captures: the lease it tries first is refused, and the references it
// took for it are given back (drain finds no registration left).
func TestUseDuringAnotherCaptureOfAStreamNotCapturedIsTracked(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	captured, other := testenv.NewStream(t), testenv.NewStream(t)
	d := memtest.DeviceInt64(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]int64, 512))
	testenv.Must(t, err)
	g.Hold(t, other)
	testenv.Must(t, libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, other))
	graphs := 0
	gr, err := graph.Capture(captured, graph.DefaultMode, func(s libcuda.Stream) error {
		var uerr error
		testenv.Recv(t, testenv.Go(func() { uerr = b.Use(other) }), "a Use on another goroutine during the capture")
		graphs = sync.CapturesInProgress()
		if uerr != nil {
			return uerr
		}
		return libcuda.MemsetD8Async(d, 0, 8, s)
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "gr.Destroy", gr.Destroy)
	if graphs != 1 {
		t.Fatalf("%d captures in progress during the Use, want 1", graphs)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	settlesAtPending(t, 1, "while the stream of the use is held")
	g.Open()
	memtest.Drain(t)
}

// A buffer Use()d in the captures of one Cached that several goroutines
// run at once, some of the captures failing after the Use, stays
// registered while any launch that copies into it may still run: after
// Free, after a later run that no longer uses it (its update finds the
// earlier launches held, so their leases go to the background), until the
// held stream is let go. The leases of the failed captures are given back
// at once, and no reference is left over: the registration is retired
// once the launches have run, and drain finds nothing.
func TestUseInConcurrentCachedRunsKeepsTheMemoryUntilTheirLaunchesEnd(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	d := memtest.DeviceInt64(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]int64, 512))
	testenv.Must(t, err)
	c := graph.NewCached(graph.DefaultMode)
	errFail := errors.New("the captured function fails on purpose")
	run := func(use, fail bool) error {
		return c.Run(s, func(s libcuda.Stream) error {
			if err := libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, s); err != nil {
				return err
			}
			if use {
				if err := b.Use(s); err != nil {
					return err
				}
			}
			if fail {
				return errFail
			}
			return nil
		})
	}
	g.Hold(t, s)
	const goroutines, runs = 4, 10
	errs := make(chan error, goroutines*runs)
	done := make([]<-chan struct{}, goroutines)
	for i := range goroutines {
		done[i] = testenv.Go(func() {
			for j := range runs {
				fail := (i+j)%3 == 1
				if err := run(true, fail); err != nil && !(fail && errors.Is(err, errFail)) {
					errs <- err
				}
			}
		})
	}
	for _, ch := range done {
		testenv.Recv(t, ch, "the runs that use the buffer")
	}
	close(errs)
	for err := range errs {
		t.Errorf("a run that uses the buffer: %v", err)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.DrainReleases(t) // the buffer's own release; the leases hold its registration
	testenv.Must(t, run(false, false))
	// The leases wait in the background for the held launches: give them
	// time to be released wrongly.
	short, cancelShort := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelShort()
	if err := graph.Drain(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("graph.Drain while the launches are held = %v, want the deadline", err)
	}
	if st := hostmem.ReadStats(); st.Registrations != 1 || st.Retired != 0 {
		t.Fatalf("freed, its launches held: %+v, want its registration in use", st)
	}
	g.Open()
	testenv.Must(t, sync.Stream(testenv.Context(t), cu, s))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, graph.Drain(ctx))
	if st := hostmem.ReadStats(); st.Registrations != 1 || st.Retired != 1 {
		t.Fatalf("its launches done, the exec running a graph that does not use it: %+v, want its registration retired", st)
	}
	testenv.MustBounded(t, "c.Close", c.Close)
	memtest.Drain(t)
}
