package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A buffer Use()d in the captures of a Cached is released from each run's
// lease by the next run's update, before that Run returns, when the run
// before has finished (as in a loop that waits for each run): once the
// buffer is freed, its registration is retired by the first run that no
// longer uses it, with nothing in the background to wait for.
func TestUseInCachedRunIsReleasedByTheNextUpdate(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	s := newStream(t)
	d := deviceInt64(t)
	drain(t)
	b, err := hostmem.Wrap(cu, make([]int64, 512))
	must(t, err)
	c := graph.NewCached(graph.DefaultMode)
	run := func(use bool) {
		t.Helper()
		must(t, c.Run(s, func(s libcuda.Stream) error {
			if err := libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, s); err != nil {
				return err
			}
			if use {
				return b.Use(s)
			}
			return nil
		}))
		must(t, libcuda.StreamSynchronize(s))
	}
	for range 3 {
		run(true)
	}
	must(t, b.Free())
	drainReleases(t) // the buffer's own release: the last run's lease holds its registration
	if st := hostmem.ReadStats(); st.Registrations != 1 || st.Retired != 0 {
		t.Fatalf("with the last run's lease alive: %+v, want its registration in use", st)
	}
	// The memory is still the graph's (a run that copies into it, without
	// its Use): only an update that replaces the leasing run releases it.
	run(false)
	if st := hostmem.ReadStats(); st.Retired != 1 {
		t.Fatalf("when the run after the last Use returned: %+v, want its registration retired", st)
	}
	must(t, c.Close())
	drain(t)
}

// A Use on a stream that no capture takes in, made while another
// goroutine captures through package graph, records an event as outside
// captures: the lease it tries first is refused, and the references it
// took for it are given back (drain finds no registration left).
func TestUseDuringAnotherCaptureOfAStreamNotCapturedIsTracked(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	captured, other := newStream(t), newStream(t)
	d := deviceInt64(t)
	g := newGate(t)
	drain(t)
	b, err := hostmem.Wrap(cu, make([]int64, 512))
	must(t, err)
	g.hold(t, other)
	must(t, libcuda.MemcpyDtoHAsync(b.Pointer(), d, 8, other))
	graphs := 0
	gr, err := graph.Capture(captured, graph.DefaultMode, func(s libcuda.Stream) error {
		var uerr error
		recv(t, testenv.Go(func() { uerr = b.Use(other) }), "a Use on another goroutine during the capture")
		graphs = graph.InProgress()
		if uerr != nil {
			return uerr
		}
		return libcuda.MemsetD8Async(d, 0, 8, s)
	})
	must(t, err)
	must(t, gr.Destroy())
	if graphs != 1 {
		t.Fatalf("%d captures in progress during the Use, want 1", graphs)
	}
	must(t, b.Free())
	settlesAtPending(t, 1, "while the stream of the use is held")
	g.open()
	drain(t)
}
