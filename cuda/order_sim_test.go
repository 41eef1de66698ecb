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

// The chunked pattern of examples/simplestreams: each of 4 streams runs a
// kernel on its own chunk of one allocation, reading a value that all of
// them share, and copies its chunk back. Once each stream has waited for
// the allocations, a repetition records no event (the simulator's
// counter): the chunks are disjoint and the shared value is passed
// ReadOnly. Passed as a plain Arg to an extern "C" kernel (whose name
// says nothing of const) the shared value counts as written by each
// launch, and each stream waits for the one before: the streams are
// serialized, which is what the sample did before it marked the value.
func TestChunksOnStreamsSharingAReadOnlyValueAreNotSerialized(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		name := "ReadOnly"
		if !readOnly {
			name = "not marked"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			sum := f.fn(t, "sum_i64") // (const long long *in, n, long long *out, spin_ns)
			const nstreams = 4
			var st [nstreams]*cuda.Stream
			for i := range st {
				st[i] = newStream(t, f.ctx, cuda.NonBlocking())
			}
			in := alloc(t, st[0], []int64{7})
			out := alloc(t, st[0], make([]int64, nstreams))
			// A copy of each chunk into memory of its stream's own (into
			// host memory, hostmem would record events of its own).
			var back [nstreams]cuda.Slice[int64]
			var dc [nstreams]cuda.Slice[int64]
			for i, s := range st {
				back[i] = alloc(t, s, make([]int64, 1))
				var err error
				dc[i], err = out.Slice(i, i+1)
				testenv.Must(t, err)
			}
			rep := func() {
				for i, s := range st {
					shared := in.Arg()
					if readOnly {
						shared = shared.ReadOnly()
					}
					testenv.Must(t, s.Launch(sum, cuda.Grid(1, 1, 1), cuda.Block(1, 1, 1), shared, cuda.Uint64(1), dc[i].Arg(), cuda.Uint64(0)))
					testenv.Must(t, cuda.Copy(s, back[i], dc[i]))
				}
			}
			rep() // each stream's first use waits for st[0]'s allocations
			records := testenv.SimStat(t, "event_records")
			for range 3 {
				rep()
			}
			got := testenv.SimStat(t, "event_records") - records
			for _, s := range st {
				sync(t, s)
			}
			for i, s := range st {
				if got := read(t, s, back[i]); got[0] != 7 {
					t.Errorf("chunk %d copied back is %d, want 7", i, got[0])
				}
			}
			switch {
			case readOnly && got != 0:
				t.Errorf("3 repetitions recorded %d events, want 0: the streams wait for each other", got)
			case !readOnly && got == 0:
				t.Errorf("3 repetitions recorded no event: a shared value written by every launch must order the streams")
			}
			t.Logf("%s: %d events recorded in 3 repetitions", name, got)
		})
	}
}
