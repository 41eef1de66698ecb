package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
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

// spinningPoller puts a wait that did not spin on the shared poller (every
// spin slot taken while it joins), with a spinning budget of a minute, so
// that the poller runs its rounds back to back until the test ends or the
// stream s (held) ends; it gives the slots back once the wait is on the
// poller.
func spinningPoller(t *testing.T, s libcuda.Stream) <-chan error {
	t.Helper()
	release := sync.HoldSpinSlots()
	t.Cleanup(release)
	res := startWaits(sync.Policy{Mode: sync.Polling, Spin: time.Minute}, []libcuda.Stream{s}, nil)
	testenv.Eventually(t, "the fresh wait on the poller", func() bool { return sync.ReadStats().PolledWaits == 1 })
	release()
	return res[0]
}

// While the shared poller spins for a wait that did not spin (its budget
// a minute here), new waits join it after their first query, although
// the spin slots are free: none spins on its own goroutine, none makes a
// query of its own past the first, none takes a helper (issue 29: a
// thousand waits starting together took the slots again and again, 326
// of them a hold in the simulator's scale bench).
func TestWaitsJoinASpinningPollerWithoutSpinning(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const m = 20
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, m+1)
	b := takeBaseline(t)
	testenv.Eventually(t, "no wait spinning", func() bool { return sync.ReadStats().SpinningWaits == 0 })
	first := spinningPoller(t, streams[m])
	s0 := sync.ReadStats()
	res := startWaits(sync.DefaultPolicy, streams[:m], nil)
	testenv.Eventually(t, "the new waits on a helper or the poller", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers+st.PolledWaits == m+1 && st.SpinningWaits == 0
	})
	s1 := sync.ReadStats()
	if n, q := s1.SpunWaits-s0.SpunWaits, s1.SpinQueries-s0.SpinQueries; n != 0 || q != 0 {
		t.Errorf("%d of %d waits spun on their own (%d queries) while the poller spun; want none", n, m, q)
	}
	if s1.ActiveHelpers != 0 {
		t.Errorf("%d waits on helpers; want all on the poller", s1.ActiveHelpers)
	}
	g.Open()
	for i, ch := range append(res, first) {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}

// A wait spinning in its slot (a budget of a minute) leaves it for the
// shared poller as soon as the poller spins for a wait beyond the slots:
// it goes on waiting there, and returns when its work ends.
func TestASpinningWaitJoinsThePollerOnceItSpins(t *testing.T) {
	testenv.OnPrimary(t, 0)
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, 2)
	b := takeBaseline(t)
	testenv.Eventually(t, "no wait spinning", func() bool { return sync.ReadStats().SpinningWaits == 0 })
	s0 := sync.ReadStats()
	spinner := startWaits(sync.Policy{Spin: time.Minute}, streams[:1], nil)[0]
	testenv.Eventually(t, "the wait spinning in its slot", func() bool { return sync.ReadStats().SpinningWaits == 1 })
	testenv.StillWaiting(t, "the spinning wait on a held stream", spinner)
	// Every other slot taken: the next wait joins the poller, which spins
	// for it (for a minute: however late the spinning wait looks).
	held := sync.SpinSlots() - 1
	release := sync.HoldSomeSpinSlots(held)
	t.Cleanup(release)
	joined := startWaits(sync.Policy{Spin: time.Minute}, streams[1:], nil)[0]
	testenv.Eventually(t, "the spinning wait on the poller beside the new one", func() bool {
		st := sync.ReadStats()
		return st.PolledWaits == 2 && st.SpinningWaits == held
	})
	if n := sync.ReadStats().HandedOver - s0.HandedOver; n != 1 {
		t.Errorf("%d waits handed over to the poller; want 1", n)
	}
	release()
	g.Open()
	for i, ch := range []<-chan error{spinner, joined} {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}
