//go:build linux && (amd64 || arm64)

package cuda_test

import (
	"errors"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A host function allocates nothing, submitted and run, either way
// (HostFunc's hand-off to a worker, HostFuncOnDriverThread on the
// driver's thread): its entry is reused, and the driver's thread enters Go
// without purego's reflection (on linux/amd64 and arm64, where the entry
// is in assembly). Counted as testing.AllocsPerRun counts, whole
// allocations a run of ten host functions, so that a worker replaced now
// and then (one idle past its time on a loaded machine) does not count as
// the host functions'. A run waits for its functions by watching them
// count, not with Sync, whose wait allocates when it goes to a helper
// thread.
func TestHostFuncAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	pending := cuda.HostFuncsPending()
	var ran atomic.Int64
	fn := func() { ran.Add(1) }
	for _, tc := range []struct {
		way    string
		submit func(func()) error
	}{
		{"HostFunc", f.s.HostFunc},
		{"HostFuncOnDriverThread", f.s.HostFuncOnDriverThread},
	} {
		const perRun, runs = 10, 100
		var err error
		round := func() {
			want := ran.Load() + perRun
			for range perRun {
				if e := tc.submit(fn); e != nil {
					err = e
				}
			}
			for start := time.Now(); ran.Load() < want; runtime.Gosched() {
				if time.Since(start) > testenv.Timeout {
					err = errors.New("the host functions did not run in time")
					return
				}
			}
		}
		round() // a worker started, entries made
		sync(t, f.s)
		testenv.Must(t, err)
		before := ran.Load()
		allocs := testing.AllocsPerRun(runs, round)
		testenv.Must(t, err)
		sync(t, f.s)
		if got := ran.Load() - before; got != (runs+1)*perRun { // AllocsPerRun runs once more to warm up
			t.Errorf("%s: %d of %d host functions ran", tc.way, got, (runs+1)*perRun)
		}
		if allocs != 0 && !raceEnabled {
			t.Errorf("%s: %v allocations a run of %d host functions, want 0", tc.way, allocs, perRun)
		}
	}
	if p := cuda.HostFuncsPending(); p != pending {
		t.Errorf("%d host functions pending after the Syncs, want %d", p, pending)
	}
}

// The driver's side of a host function takes no lock that a submission
// holds: host functions submitted before run to the end, and give their
// entries back, while the table's lock is held (a submission in the
// middle of taking an entry, say).
func TestHostFuncsRunWhileTheTableIsLocked(t *testing.T) {
	for _, c := range []struct {
		name   string
		submit func(*cuda.Stream, func()) error
	}{
		{"HostFunc", (*cuda.Stream).HostFunc},
		{"HostFuncOnDriverThread", (*cuda.Stream).HostFuncOnDriverThread},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			pending := cuda.HostFuncsPending()
			gate := make(chan struct{})
			var ran atomic.Int32
			testenv.Must(t, c.submit(f.s, func() { <-gate; ran.Add(1) }))
			for range 3 {
				testenv.Must(t, c.submit(f.s, func() { ran.Add(1) }))
			}
			var unlock gosync.Once
			locked := cuda.LockHostTable()
			t.Cleanup(func() { unlock.Do(locked) }) // after a failure below: let the stream go on
			close(gate)
			err := testenv.BoundedErr(t, "the stream's host functions with the table locked", func() error { return f.s.Sync(testenv.Context(t)) })
			unlock.Do(locked)
			testenv.Must(t, err)
			if got := ran.Load(); got != 4 {
				t.Errorf("%d of 4 host functions ran", got)
			}
			if p := cuda.HostFuncsPending(); p != pending {
				t.Errorf("%d entries in use after the host functions ran, want %d", p, pending)
			}
		})
	}
}
