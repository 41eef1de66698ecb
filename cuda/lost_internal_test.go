package cuda

import (
	"slices"
	"testing"
)

// The launch history's write: what the history adds to a launch, with no
// allocation (run with -benchmem).
func BenchmarkLaunchHistoryRecord(b *testing.B) {
	dv := &devState{ring: make([]launchSlot, 64)}
	f, st := &Func{name: "k"}, &streamState{}
	d := [6]uint32{1, 1, 1, 256, 1, 1}
	b.ReportAllocs()
	for b.Loop() {
		dv.record(f, st, &d, 0)
	}
}

// The history keeps the newest launches, newest first, a stream's alone
// or every stream's, and leaves out those a wait has seen done.
func TestLaunchHistoryCandidates(t *testing.T) {
	dv := &devState{ring: make([]launchSlot, 4)}
	f := &Func{name: "k"}
	a, b := &streamState{raw: 10}, &streamState{raw: 20}
	d := [6]uint32{1, 1, 1, 1, 1, 1}
	for i := range 6 { // 1..6: a b a b a b; the ring keeps 3..6
		st := a
		if i%2 == 1 {
			st = b
		}
		dv.record(f, st, &d, 0)
	}
	numbers := func(ls []LaunchInfo) []uint64 {
		var n []uint64
		for _, l := range ls {
			n = append(n, l.Number)
		}
		return n
	}
	check := func(what string, got []LaunchInfo, want ...uint64) {
		t.Helper()
		if g := numbers(got); !slices.Equal(g, want) {
			t.Errorf("%s: launches %v, want %v", what, g, want)
		}
	}
	check("every stream", dv.candidates(nil), 6, 5, 4, 3)
	check("stream a", dv.candidates(a), 5, 3)
	a.noteWaited(3)
	check("stream a after a wait saw 3 done", dv.candidates(a), 5)
	dv.noteSynced(5)
	check("every stream after a context wait saw 5 done", dv.candidates(nil), 6)
	if allocs := testing.AllocsPerRun(100, func() { dv.record(f, a, &d, 0) }); allocs != 0 {
		t.Errorf("a history write allocates %v times, want 0", allocs)
	}
}
