//go:build !gpu

package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The fork/join loop with reused events creates no event per iteration
// (the simulator's count of cuEventCreate), where Record creates one each.
func TestForkJoinWithReusedEventsCreatesNoEvents(t *testing.T) {
	f := newFixture(t)
	s2 := newStream(t, f.ctx)
	fork, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "fork.Close", fork.Close)
	join, err := cuda.NewEvent(f.ctx, cuda.DisableTiming())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "join.Close", join.Close)
	before := testenv.SimStat(t, "event_creates")
	for range 100 {
		testenv.Must(t, forkJoin(f.s, s2, fork, join))
	}
	if n := testenv.SimStat(t, "event_creates") - before; n != 0 {
		t.Errorf("100 fork/join iterations with reused events created %d events, want 0", n)
	}
	// The same loop with Record: one event a record, so the count can fail.
	before = testenv.SimStat(t, "event_creates")
	for range 10 {
		e, err := f.s.Record()
		testenv.Must(t, err)
		testenv.MustBounded(t, "s2.Wait", func() error { return s2.Wait(e) })
		testenv.MustBounded(t, "e.Close", e.Close)
	}
	if n := testenv.SimStat(t, "event_creates") - before; n != 10 {
		t.Errorf("10 Records created %d events, want 10", n)
	}
	sync(t, f.s)
	sync(t, s2)
}
