package cuda_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// forkJoin is one iteration of a fork/join loop on two streams with two
// reused events: s2 waits for s1's work so far, does its part, and s1
// waits for that.
func forkJoin(s1, s2 *cuda.Stream, fork, join *cuda.Event) error {
	if err := s1.RecordEvent(fork); err != nil {
		return err
	}
	if err := s2.Wait(fork); err != nil {
		return err
	}
	if err := s2.RecordEvent(join); err != nil {
		return err
	}
	return s1.Wait(join)
}

// A fork/join loop with events made once allocates nothing per iteration.
func TestForkJoinWithReusedEventsAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	s2 := newStream(t, f.ctx)
	fork, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "fork.Close", fork.Close)
	join, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "join.Close", join.Close)
	var loopErr error
	allocs := testing.AllocsPerRun(200, func() {
		if err := forkJoin(f.s, s2, fork, join); err != nil {
			loopErr = err
		}
	})
	testenv.Must(t, loopErr)
	if allocs != 0 {
		t.Errorf("a fork/join iteration with reused events allocates %v times, want 0", allocs)
	}
	sync(t, f.s)
}

// A reused event orders the streams each time: s2's kernel, after a wait
// for the event recorded on s1 after the copy, sees the copy's data in
// each iteration.
func TestRecordEventAgainOrdersEachTime(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	s1 := newStream(t, f.ctx, cuda.NonBlocking())
	s2 := newStream(t, f.ctx, cuda.NonBlocking())
	addOne := f.fn(t, "add_one_i32")
	ev, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "ev.Close", ev.Close)
	x := alloc(t, s1, make([]int32, 4))
	sync(t, s1)
	for i := range 3 {
		gate := testenv.NewGate(t)
		gate.Hold(t, s1.Raw())
		vals := []int32{int32(10 * i), 1, 2, 3}
		testenv.Must(t, cuda.CopyToDevice(s1, x, vals))
		testenv.Must(t, s1.RecordEvent(ev))
		done, err := ev.Query()
		testenv.Must(t, err)
		if done {
			t.Fatalf("iteration %d: the event recorded again behind a held stream is complete", i)
		}
		testenv.MustBounded(t, "s2.Wait", func() error { return s2.Wait(ev) })
		testenv.Must(t, s2.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), x.Arg(), cuda.Uint64(4)))
		gate.Open()
		got := read(t, s2, x)
		want := []int32{int32(10*i) + 1, 2, 3, 4}
		if !slices.Equal(got, want) {
			t.Fatalf("iteration %d: %v, want %v", i, got, want)
		}
		testenv.MustBounded(t, "s1.Sync", func() error { return s1.Sync(context.Background()) })
	}
}

func TestNewEventOptions(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name   string
		opts   []cuda.EventOption
		timing bool
	}{
		{"default", nil, true},
		{"DisableTiming", []cuda.EventOption{cuda.DisableTiming()}, false},
		{"BlockingSync", []cuda.EventOption{cuda.BlockingSync()}, true},
		{"Interprocess", []cuda.EventOption{cuda.Interprocess()}, false},
		{"BlockingSync+DisableTiming", []cuda.EventOption{cuda.BlockingSync(), cuda.DisableTiming()}, false},
		{"zero option", []cuda.EventOption{{}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := cuda.NewEvent(f.ctx, c.opts...)
			testenv.Must(t, err)
			defer testenv.MustBounded(t, "a.Close", a.Close)
			b, err := cuda.NewEvent(f.ctx, c.opts...)
			testenv.Must(t, err)
			defer testenv.MustBounded(t, "b.Close", b.Close)
			testenv.Must(t, f.s.RecordEvent(a))
			testenv.Must(t, f.s.RecordEvent(b))
			ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
			defer cancel()
			testenv.MustBounded(t, "b.Sync", func() error { return b.Sync(ctx) })
			done, err := a.Query()
			testenv.Must(t, err)
			if !done {
				t.Error("an event before a completed one is not complete")
			}
			_, err = cuda.Elapsed(a, b)
			if c.timing && err != nil {
				t.Errorf("Elapsed: %v", err)
			}
			if !c.timing && err == nil {
				t.Error("Elapsed of events without timing succeeded")
			}
		})
	}
	// An event never recorded is complete, as the driver says.
	e, err := cuda.NewEvent(f.ctx)
	testenv.Must(t, err)
	done, err := e.Query()
	testenv.Must(t, err)
	if !done {
		t.Error("an event never recorded is not complete")
	}
	testenv.MustBounded(t, "e.Close", e.Close)
	if err := testenv.BoundedErr(t, "f.s.RecordEvent", func() error { return f.s.RecordEvent(e) }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("RecordEvent of a closed event: %v, want ErrClosed", err)
	}
	if err := f.s.RecordEvent(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("RecordEvent(nil): %v, want ErrNil", err)
	}
	if _, err := cuda.NewEvent(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("NewEvent(nil): %v, want ErrNil", err)
	}
}

func TestRecordEventRefusesAnotherContextsEvent(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) < 2 {
		t.Skipf("needs 2 devices; this machine has %d", len(devs))
	}
	f := newFixture(t)
	other, err := devs[1].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "other.Close", other.Close)
	e, err := cuda.NewEvent(other)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "e.Close", e.Close)
	if err := f.s.RecordEvent(e); err == nil {
		t.Error("RecordEvent of another context's event succeeded")
	}
}

// Elapsed before the later event has completed does not wait: it fails at
// once with an error matching ErrNotReady that says what to do, and
// succeeds once the event is synchronized.
func TestElapsedBeforeCompletionIsNotReady(t *testing.T) {
	testenv.OnPrimary(t, 0) // for the gate
	f := newFixture(t)
	start, err := f.s.Record()
	testenv.Must(t, err)
	defer start.Close()
	testenv.Must(t, start.Sync(context.Background()))
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s.Raw())
	end, err := f.s.Record()
	testenv.Must(t, err)
	defer end.Close()
	_, err = cuda.Elapsed(start, end)
	if !errors.Is(err, cuda.ErrNotReady) {
		t.Errorf("Elapsed before the end event completed: %v, want ErrNotReady", err)
	} else if !strings.Contains(err.Error(), "not completed") {
		t.Errorf("Elapsed before the end event completed says %q, not that it has not completed", err)
	}
	gate.Open()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.Must(t, end.Sync(ctx))
	d, err := cuda.Elapsed(start, end)
	if err != nil || d < 0 {
		t.Errorf("Elapsed once completed = %v, %v", d, err)
	}
}
