package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The launch attributes of Config go through cuLaunchKernelEx: each
// launch runs and gives the kernel's result; a programmatic event
// completes with the kernel, and another stream can wait on it.
func TestLaunchWithAttributes(t *testing.T) {
	f := newFixture(t)
	major, _, err := f.ctx.Device().ComputeCapability()
	testenv.Must(t, err)
	_, greatest, err := f.ctx.StreamPriorities()
	testenv.Must(t, err)
	saxpy := f.fn(t, "saxpy")
	ev, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ev.Close", ev.Close) })
	hopper := []struct {
		name string
		cfg  cuda.Config
	}{
		{"ProgrammaticSerialization", cuda.Config{ProgrammaticSerialization: true}},
		{"ProgrammaticEvent", cuda.Config{ProgrammaticEvent: ev}},
		{"ProgrammaticEventAtBlockStart", cuda.Config{ProgrammaticEvent: ev, ProgrammaticEventAtBlockStart: true}},
		{"MemSyncRemote", cuda.Config{MemSyncDomain: cuda.MemSyncRemote}},
	}
	cases := append(hopper[:len(hopper):len(hopper)], struct {
		name string
		cfg  cuda.Config
	}{"Priority", cuda.Config{Priority: greatest}})
	for _, c := range cases {
		x := alloc(t, f.s, []float32{1, 2})
		y := alloc(t, f.s, []float32{1, 1})
		c.cfg.Grid, c.cfg.Block = cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1)
		err := f.s.LaunchWith(saxpy, c.cfg, cuda.Int32(2), cuda.Float32(2), x.Arg(), y.Arg())
		if major < 9 && c.cfg.Priority == 0 {
			if err == nil {
				t.Errorf("%s on compute capability %d: no error", c.name, major)
			}
			continue
		}
		testenv.Must(t, err)
		if c.cfg.ProgrammaticEvent != nil {
			other := newStream(t, f.ctx, cuda.NonBlocking())
			testenv.MustBounded(t, "other.Wait", func() error { return other.Wait(ev) })
			sync(t, other)
			done, err := ev.Query()
			testenv.Must(t, err)
			if !done {
				t.Errorf("%s: the event is not complete after a stream that waited on it", c.name)
			}
		}
		if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 5}) {
			t.Errorf("%s: got %v, want [3 5]", c.name, got)
		}
	}
	if err := f.s.LaunchWith(saxpy, cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(1, 1, 1), MemSyncDomain: 7},
		cuda.Int32(0), cuda.Float32(2), cuda.Ptr(0), cuda.Ptr(0)); err == nil {
		t.Error("MemSyncDomain 7: no error")
	}
}
