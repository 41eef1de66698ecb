//go:build linux || windows

package hostmem_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// BenchmarkHostmemCycle is the steady state of a wrap/use/free loop: the
// memory's registration is retired and revived, so no driver call
// registers or unregisters; allocs/op is what the cycle costs the GC.
func BenchmarkHostmemCycle(b *testing.B) {
	ctx := testenv.OnPrimary(b, 0)
	s := testenv.NewStream(b)
	mem := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := hostmem.Wrap(ctx, mem)
		testenv.Must(b, err)
		testenv.Must(b, buf.Use(s))
		testenv.MustBounded(b, "buf.Free", buf.Free)
	}
	b.StopTimer()
	testenv.Must(b, hostmem.Drain(context.Background()))
}

// A steady wrap/use/free loop costs the GC one small allocation a cycle,
// the Buffer, 32 bytes (issue 29; it was three, with runtime.AddCleanup's
// two, and 65 bytes a cycle while a stream's queue of uses was
// reallocated as it slid along its room): the state of a buffer whose
// release has ended is reused (from a list the collector does not empty),
// the buffer's finalizer allocates nothing, and the owner's rounds keep
// their scratch space and the stream's queue, whose room is reused in
// place. Each byte here makes the collector run, and its runs hold other
// goroutines' launches (tools/bench's "launch call p99, busy GPU" rows).
//
// The Buffer itself cannot be pooled: Wrap returns a *Buffer, and one
// given out again after a Free would be the same pointer as the stale one
// its first user may still hold, which would then reach the new user's
// buffer (a Free twice, a Use after Free). A Buffer's generation guards
// its state, reused, not the Buffer.
func TestWrapUseFreeLoopAllocations(t *testing.T) {
	testenv.NoErrorsLogged(t)
	ctx := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	mem := make([]byte, 64<<10)
	var err error
	cycle := func() {
		buf, werr := hostmem.Wrap(ctx, mem)
		if werr != nil {
			err = werr
			return
		}
		if uerr := buf.Use(s); uerr != nil {
			err = uerr
		}
		if ferr := buf.Free(); ferr != nil {
			err = ferr
		}
	}
	// Rounds of cycles, each waited for, so that the count of pending
	// uses, and with it the reaper's queue, is the same however fast the
	// reaper keeps up on this machine; a round is long enough that its
	// Wait adds little to a cycle's count.
	const round = 1024
	var bytes uint64
	var ms runtime.MemStats
	r := func() {
		runtime.ReadMemStats(&ms)
		b0 := ms.TotalAlloc
		for range round {
			cycle()
		}
		if werr := hostmem.Wait(context.Background()); werr != nil {
			err = werr
		}
		runtime.ReadMemStats(&ms)
		bytes += ms.TotalAlloc - b0
	}
	// First a round with all its uses in flight at once (the stream
	// held): the pooled events, the free states and the queue's room
	// grow to a round's worth here, not in a counted round.
	gate := testenv.NewGate(t)
	gate.Hold(t, s)
	for range round {
		cycle()
	}
	gate.Open()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	for range 4 {
		r()
	}
	testenv.Must(t, err)
	const rounds = 20
	bytes = 0
	// AllocsPerRun runs r once more first: not in allocs, in the bytes.
	allocs := testing.AllocsPerRun(rounds, r) / round
	testenv.Must(t, err)
	wantOneSmallAllocation(t, "", allocs, float64(bytes)/float64((rounds+1)*round))
	memtest.Drain(t)
}

// wantOneSmallAllocation fails t unless a cycle of a wrap/use/free loop
// (where: the loop's circumstances, for the message) allocated about one
// Buffer: allocs allocations and perCycle bytes a cycle.
func wantOneSmallAllocation(t *testing.T, where string, allocs, perCycle float64) {
	t.Helper()
	t.Logf("%.3f allocations, %.0f bytes a cycle", allocs, perCycle)
	maxAllocs, maxBytes := 1.02, 48.0
	if raceDetector {
		maxAllocs, maxBytes = 1.1, 72
	}
	if allocs > maxAllocs || perCycle > maxBytes {
		t.Errorf("%.3f allocations and %.0f bytes a cycle%s; want at most %.2f and %.0f", allocs, perCycle, where, maxAllocs, maxBytes)
	}
}

// The release machinery allocates nothing a cycle either while the GPU is
// still busy with the uses: here the uses of a round of cycles wait behind
// a held stream through many rounds of the owner (each queries a use that
// is not complete, then searches the older ones), over several
// registrations (tools/bench's loop wraps 8 slices in turn) and two
// streams, then complete at once. The states, the events, the queues' room
// and the owner's scratch space are reused from round to round, so a cycle
// still costs one allocation, the Buffer (issue 29 item 5; three with
// runtime.AddCleanup).
func TestWrapUseFreeBehindABusyStreamAllocations(t *testing.T) {
	testenv.NoErrorsLogged(t)
	ctx := testenv.OnPrimary(t, 0)
	streams := []libcuda.Stream{testenv.NewStream(t), testenv.NewStream(t)}
	mems := make([][]byte, 8)
	for i := range mems {
		mems[i] = make([]byte, 64<<10)
	}
	gate := testenv.NewGate(t) // opened when the test ends, failed or not
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	wctx := testenv.Context(t)
	const round = 512
	// In the first rounds, not counted: whether the owner queried the
	// held uses' events (the simulator's counters; reading one allocates).
	probe, queried := true, false
	r := func() {
		// Close the gate and hold the first stream behind it.
		atomic.StoreUint32((*uint32)(gate.Host()), 0)
		keep(libcuda.StreamWaitValue32(streams[0], gate.Dev(), 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
		for i := range round {
			buf, werr := hostmem.Wrap(ctx, mems[i%len(mems)])
			if werr != nil {
				keep(werr)
				return
			}
			keep(buf.Use(streams[i%len(streams)]))
			keep(buf.Free())
		}
		// The owner's rounds (a tick of 1ms) find the held uses pending.
		var q0 int64
		if probe {
			q0, _ = testenv.Stat(t, "event_queries")
		}
		for range 4 {
			if hostmem.ReadStats().Pending == 0 {
				keep(errors.New("no release pending behind the held stream"))
			}
			time.Sleep(2 * time.Millisecond)
		}
		if probe {
			q, _ := testenv.Stat(t, "event_queries")
			queried = queried || q > q0
		}
		gate.Open()
		keep(hostmem.Wait(wctx))
	}
	for range 3 { // the registrations, the pooled states and events, the queues
		r()
	}
	probe = false
	if _, sim := testenv.Stat(t, "event_queries"); sim && !queried {
		t.Error("the owner queried no event while the uses were held")
	}
	testenv.Must(t, err)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b0 := ms.TotalAlloc
	// AllocsPerRun runs r once more first, counted here in the bytes.
	const rounds = 10
	allocs := testing.AllocsPerRun(rounds, r) / round
	runtime.ReadMemStats(&ms)
	perCycle := float64(ms.TotalAlloc-b0) / float64((rounds+1)*round)
	testenv.Must(t, err)
	wantOneSmallAllocation(t, " behind a busy stream", allocs, perCycle)
	memtest.Drain(t)
}
