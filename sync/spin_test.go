package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/sync"
)

// holdSpinSlots takes every spin slot until t ends, as spinning waits
// would (they could leave their slot early: a spinning wait hands over
// when the queries in flight reach GOMAXPROCS).
func holdSpinSlots(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, "no wait spinning", func() bool { return sync.ReadStats().SpinningWaits == 0 })
	release := sync.HoldSpinSlots()
	t.Cleanup(release)
}

// With every spin slot taken, a wait that its first query does not end
// joins the shared poller at once: it neither spins on its own goroutine
// nor takes a helper thread, whatever its mode (issue 29: a thousand
// waiters spinning at once took 6.9 cores on the H200).
func TestWaitsBeyondTheSpinSlotsJoinThePollerAtOnce(t *testing.T) {
	testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	b := takeBaseline(t)
	holdSpinSlots(t)
	var res []<-chan error
	polled := 0
	for _, p := range []sync.Policy{{Mode: sync.Auto}, {Mode: sync.Polling}} {
		streams := heldStreams(t, g, 3)
		waits := startWaits(p, streams, nil)
		polled += len(waits)
		testenv.Eventually(t, fmt.Sprintf("the %v waits on the poller", p.Mode), func() bool { return sync.ReadStats().PolledWaits == polled })
		if st := sync.ReadStats(); st.SpinningWaits != sync.SpinSlots() || st.ActiveHelpers != 0 {
			t.Fatalf("%v waits beyond the spin slots: %+v; want %d spinning (the slots' own) and no helper", p.Mode, st, sync.SpinSlots())
		}
		testenv.StillWaiting(t, "a polled wait on a held stream", waits[0])
		res = append(res, waits...)
	}
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}

// The poller does not sleep between its rounds while a wait that joined it
// without spinning is within its spin and yield budgets (it spins for that
// wait), and sleeps again once they are spent: its sleeps stand still
// over a hundred rounds, and then grow.
func TestThePollerSpinsForWaitsThatDidNot(t *testing.T) {
	testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	b := takeBaseline(t)
	release := sync.HoldSpinSlots()
	t.Cleanup(release) // should the test end early; it releases them itself below
	fresh := heldStreams(t, g, 1)
	res := startWaits(sync.Policy{Mode: sync.Polling, Spin: time.Minute}, fresh, nil)
	testenv.Eventually(t, "the fresh wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
	r0, _ := sync.PollerCounts()
	s0 := sync.PollerSleeps()
	testenv.Eventually(t, "a hundred poller rounds", func() bool { r, _ := sync.PollerCounts(); return r >= r0+100 })
	// The wait joined before r0 was read, so every round since counted
	// it: at most the round under way when it joined can have slept.
	if n := sync.PollerSleeps() - s0; n > 1 {
		t.Fatalf("the poller slept %d times in 100 rounds while a wait was in its spin budget", n)
	}
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	release()
	// A wait that spun on its own first (Polling mode, default budgets,
	// its slot free) gets no more from the poller: it sleeps between
	// rounds.
	g2 := testenv.NewGate(t)
	s := testenv.NewStream(t)
	g2.Hold(t, s)
	polled := testenv.WaitAsync(func() error { return sync.Policy{Mode: sync.Polling}.Stream(context.Background(), 0, s) })
	testenv.Eventually(t, "the spun wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
	s1 := sync.PollerSleeps()
	testenv.Eventually(t, "the poller to sleep between rounds", func() bool { return sync.PollerSleeps() >= s1+3 })
	g2.Open()
	testenv.Must(t, testenv.Recv(t, polled, "the spun wait"))
	b.back(t)
}

// However many waits start at once, no more than the spin slots spin at
// the same time, and all of them end when their work does.
func TestManyWaitsSpinInTheSlotsOnly(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const m = 64
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, m)
	b := takeBaseline(t)
	sync.ResetSpinningPeak()
	res := startWaits(sync.DefaultPolicy, streams, nil)
	testenv.Eventually(t, "every wait on a helper or the poller", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers+st.PolledWaits == m
	})
	if peak := sync.SpinningPeak(); peak > sync.SpinSlots() || peak == 0 {
		t.Fatalf("%d waits spun at once at the peak; want between 1 and the %d spin slots", peak, sync.SpinSlots())
	}
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}
