//go:build !gpu

package hostmem_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// The driver calls a wrap/use/free cycle may make, counted by the
// simulator for every thread ("calls:") and for the calling thread
// ("thread_calls:"); a test goroutine holds its thread (testenv.OnPrimary).
var cycleCalls = []string{
	"cuEventQuery", "cuEventRecord", "cuCtxGetId", "cuStreamGetId", "cuStreamIsCapturing",
	"cuStreamGetCtx", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuEventCreate", "cuEventDestroy",
	"cuMemHostRegister", "cuMemHostUnregister", "cuThreadExchangeStreamCaptureMode",
}

// callCounts are counts of cycleCalls' calls: on the test's thread (own)
// and on all the others (the owner goroutine's and any helper's).
type callCounts struct{ own, others map[string]int64 }

func readCalls(t *testing.T) callCounts {
	t.Helper()
	c := callCounts{map[string]int64{}, map[string]int64{}}
	for _, n := range cycleCalls {
		own := testenv.SimStat(t, "thread_calls:"+n)
		c.own[n] = own
		c.others[n] = testenv.SimStat(t, "calls:"+n) - own
	}
	return c
}

// since returns the calls made from c0 to c.
func (c callCounts) since(c0 callCounts) callCounts {
	d := callCounts{map[string]int64{}, map[string]int64{}}
	for _, n := range cycleCalls {
		d.own[n] = c.own[n] - c0.own[n]
		d.others[n] = c.others[n] - c0.others[n]
	}
	return d
}

func (c callCounts) add(d callCounts) {
	for _, n := range cycleCalls {
		c.own[n] += d.own[n]
		c.others[n] += d.others[n]
	}
}

func (c callCounts) String() string {
	var b strings.Builder
	for _, n := range cycleCalls {
		if c.own[n] != 0 || c.others[n] != 0 {
			fmt.Fprintf(&b, " %s %d/%d", n, c.own[n], c.others[n])
		}
	}
	return "calls (loop/others):" + b.String()
}

// cycleSetup makes a context current on the test's thread (which the
// test goroutine holds) and a stream, and returns them with the slices
// tools/bench's loop wraps in turn, nothing of hostmem pending.
func cycleSetup(t *testing.T) (libcuda.Context, libcuda.Stream, [][]byte) {
	t.Helper()
	testenv.NoErrorsLogged(t)
	ctx := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	mems := make([][]byte, 8)
	for i := range mems {
		mems[i] = make([]byte, 64<<10)
	}
	memtest.Drain(t)
	return ctx, s, mems
}

// cycle wraps mem, uses it on s and frees it, as tools/bench's loop does.
func cycle(t *testing.T, ctx libcuda.Context, s libcuda.Stream, mem []byte) {
	t.Helper()
	b, err := hostmem.Wrap(ctx, mem)
	testenv.Must(t, err)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
}

// warmUp runs n wrap/use/free cycles on s held behind a gate, so that all
// their uses are in flight at once, then opens the gate and waits: the
// memory's registrations are retired and at least n events are pooled,
// enough for any later loop with no more than n uses in flight.
func warmUp(t *testing.T, ctx libcuda.Context, s libcuda.Stream, mems [][]byte, n int) {
	t.Helper()
	gate := testenv.NewGate(t)
	gate.Hold(t, s)
	for i := range n {
		cycle(t, ctx, s, mems[i%len(mems)])
	}
	gate.Open()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
}

// A wrap/use/free cycle on a stream used before, in the steady state
// (registrations retired and revived, events pooled), makes four driver
// calls on the caller's thread, each once: cuCtxGetId (Wrap: which
// context), cuStreamIsCapturing, cuStreamGetId and cuEventRecord (Use).
// No event query, no register or unregister, no event created, no switch
// of context or capture mode. The rounds of 256 cycles are each waited
// for, so that the uses in flight, and with them the pooled events, are
// the same in every round however fast the owner keeps up here.
func TestWrapUseFreeCycleDriverCalls(t *testing.T) {
	ctx, s, mems := cycleSetup(t)
	const round, rounds = 256, 8
	warmUp(t, ctx, s, mems, round)
	loop := callCounts{map[string]int64{}, map[string]int64{}}
	for range rounds {
		c0 := readCalls(t)
		for i := range round {
			cycle(t, ctx, s, mems[i%len(mems)])
		}
		d := readCalls(t).since(c0) // before Wait, whose rounds run here
		testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
		loop.add(d)
	}
	const cycles = round * rounds
	t.Logf("%d cycles: %v", cycles, loop)
	want := map[string]int64{"cuCtxGetId": cycles, "cuStreamIsCapturing": cycles, "cuStreamGetId": cycles, "cuEventRecord": cycles}
	for _, n := range cycleCalls {
		if got := loop.own[n]; got != want[n] {
			t.Errorf("%d cycles made %d %s calls on their thread; want %d", cycles, got, n, want[n])
		}
	}
	memtest.Drain(t)
}

// The owner's event queries come at a bounded rate however fast the
// Frees come: at most one round a tick (hostmem.OwnerTick), one query of
// a stream a round when its work keeps up, and one cuCtxGetId a round for
// the context. Here every use has completed before its Free (the loop
// synchronizes the stream in between), as on the H200 when the loop's
// stream holds nothing but its event records: there the owner used to be
// woken by nearly every Free and query that Free's use (0.88 queries and
// 0.88 cuCtxGetId a cycle here, some 22,000 a second: as many as a loop
// of cuEventQuery on another thread, which raised the H200's launch p99
// 1.6-1.9 times).
//
// The bound grows with the time the loop took, so that a slow or loaded
// machine gives the owner more rounds, never a failure.
func TestOwnerQueriesAtABoundedRate(t *testing.T) {
	ctx, s, mems := cycleSetup(t)
	const cycles = 2000
	// A cycle whose use has completed before its Free.
	syncedCycle := func(i int) {
		b, err := hostmem.Wrap(ctx, mems[i%len(mems)])
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	warmUp(t, ctx, s, mems, 1024)
	c0, st0 := readCalls(t), hostmem.ReadStats()
	start := time.Now()
	for i := range cycles {
		syncedCycle(i)
	}
	elapsed := time.Since(start)
	d, st := readCalls(t).since(c0), hostmem.ReadStats()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	ticks := int64(elapsed / hostmem.OwnerTick)
	queries, wakeups := st.EventQueries-st0.EventQueries, st.OwnerWakeups-st0.OwnerWakeups
	t.Logf("%d cycles in %v (%d ticks): %v; Stats: %d event queries, %d owner wake-ups", cycles, elapsed, ticks, d, queries, wakeups)
	// The two counts are read one after the other, each perhaps while the
	// owner is in a query: one apart at each end.
	if diff := queries - d.others["cuEventQuery"]; diff < -2 || diff > 2 {
		t.Errorf("Stats.EventQueries counted %d queries, the simulator %d", queries, d.others["cuEventQuery"])
	}
	// A Free wakes nobody: the owner takes new work at its ticks.
	if limit := ticks + 2; wakeups > limit {
		t.Errorf("the owner was started or woken %d times in %d ticks, %.3f a cycle; want at most one a tick (%d)", wakeups, ticks, float64(wakeups)/cycles, limit)
	}
	// The first round may come at once; the uses are all complete, so
	// each round queries one event (the stream's target) and asks for
	// the one context's id once.
	limit := ticks + 2
	for _, n := range []string{"cuEventQuery", "cuCtxGetId"} {
		if got := d.others[n]; got > limit {
			t.Errorf("the owner made %d %s calls in %d ticks, %.3f a cycle; want at most one a tick (%d)", got, n, ticks, float64(got)/cycles, limit)
		}
	}
	memtest.Drain(t)
}

// Behind a held stream, an unpaced loop's uses cost the owner at most two
// queries a round (the target, then the oldest pending use, which says
// that no older one is complete either), at most one round a tick, and no
// more for the thousands of uses pending.
func TestOwnerQueriesBehindAHeldStream(t *testing.T) {
	ctx, s, mems := cycleSetup(t)
	warmUp(t, ctx, s, mems, 256)
	gate := testenv.NewGate(t)
	gate.Hold(t, s)
	c0 := readCalls(t)
	start := time.Now()
	n := 0
	for time.Since(start) < 50*time.Millisecond || n < 2000 {
		cycle(t, ctx, s, mems[n%len(mems)])
		n++
	}
	elapsed := time.Since(start)
	d := readCalls(t).since(c0)
	if p := hostmem.ReadStats().Pending; p != n {
		t.Fatalf("%d releases pending behind the held stream, want %d", p, n)
	}
	gate.Open()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	ticks := int64(elapsed / hostmem.OwnerTick)
	t.Logf("%d cycles in %v (%d ticks): %v", n, elapsed, ticks, d)
	if got, limit := d.others["cuEventQuery"], 2*(ticks+2); got > limit {
		t.Errorf("the owner made %d event queries in %d ticks behind a held stream; want at most two a tick (%d)", got, ticks, limit)
	}
	memtest.Drain(t)
}
