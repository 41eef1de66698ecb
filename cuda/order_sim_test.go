//go:build !gpu

package cuda_test

import (
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// One stream costs nothing: launches and copies of a Slice on the stream
// it was allocated on record no event and make none (the simulator's
// counters); a use on a second stream records one.
func TestOneStreamOrderingRecordsNoEvent(t *testing.T) {
	f := newOrderFixture(t)
	addOne := f.fn(t, "add_one_i32")
	creates, records := testenv.SimStat(t, "event_creates"), testenv.SimStat(t, "event_records")
	y := alloc(t, f.s1, make([]int32, 8))
	for range 50 {
		testenv.Must(t, f.s1.Launch(addOne, cuda.Grid(1, 1, 1), cuda.Block(8, 1, 1), f.x.Arg(), cuda.Uint64(8)))
		testenv.Must(t, cuda.Copy(f.s1, y, f.x))
		testenv.Must(t, cuda.Memset(f.s1, f.x, 2))
	}
	if c, r := testenv.SimStat(t, "event_creates")-creates, testenv.SimStat(t, "event_records")-records; c != 0 || r != 0 {
		t.Errorf("150 uses on one stream created %d events and recorded %d, want 0 and 0", c, r)
	}
	z := alloc(t, f.s2, make([]int32, 8))
	sync(t, f.s2)
	records = testenv.SimStat(t, "event_records")
	testenv.Must(t, cuda.Copy(f.s2, z, f.x)) // reads x, last written on s1
	if r := testenv.SimStat(t, "event_records") - records; r != 1 {
		t.Errorf("a read on a second stream recorded %d events, want 1", r)
	}
	testenv.Must(t, cuda.Copy(f.s2, z, f.x)) // s2 waited for that write already
	if r := testenv.SimStat(t, "event_records") - records; r != 1 {
		t.Errorf("a second read on the second stream recorded %d more events, want none", r-1)
	}
	sync(t, f.s2)
}

// A stream made with Unordered is not ordered: its read goes ahead of the
// held write (the old data), as before the tracking.
func TestUnorderedStreamIsNotOrdered(t *testing.T) {
	f := newOrderFixture(t, cuda.Unordered())
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s1.Raw())
	testenv.Must(t, cuda.Memset(f.s1, f.x, 9))
	testenv.Must(t, cuda.CopyToHost(f.s2, f.out, f.x))
	sync(t, f.s2)
	if got := f.out.Data(); !slices.Equal(got, seq8) {
		t.Errorf("the unordered stream read %v, want the data before the held write %v", got, seq8)
	}
	gate.Open()
}
