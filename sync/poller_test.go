package sync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// osThreads counts the process's OS threads (Linux); -1 elsewhere.
func osThreads() int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	return len(tasks)
}

// baseline is the goroutines and OS threads before a test starts waits.
type baseline struct{ goroutines, threads int }

func takeBaseline(t *testing.T) baseline {
	t.Helper()
	testenv.Eventually(t, "idle helpers to exit and the poller to stop", func() bool {
		st := sync.ReadStats()
		return st.HelperThreads == 0 && st.PolledWaits == 0 && !sync.PollerRunning()
	})
	return baseline{runtime.NumGoroutine(), osThreads()}
}

// back checks that the waits left nothing behind: no polled wait, no
// poller, no helper thread once idle ones have exited (helperIdle), the
// goroutines of before, and OS threads within the runtime's own growth
// (Go keeps idle threads for reuse; the locked helper threads end).
func (b baseline) back(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, "the goroutines of before, no poller, no helper thread", func() bool {
		st := sync.ReadStats()
		return st.PolledWaits == 0 && !sync.PollerRunning() && st.HelperThreads == 0 && runtime.NumGoroutine() <= b.goroutines
	})
	if b.threads >= 0 {
		if limit := b.threads + 2*runtime.GOMAXPROCS(0) + 8; osThreads() > limit {
			t.Errorf("%d OS threads after the waits, %d before: more than the runtime's own growth", osThreads(), b.threads)
		}
	}
}

// heldStreams creates n streams held until gate g opens: the first by the
// gate itself, the others by an event recorded on it after the gate (the
// simulator runs a thread for each stream, and one held by the gate polls
// the gate's word every 20µs: a thousand of them would be the test's
// load).
func heldStreams(t *testing.T, g *testenv.Gate, n int) []libcuda.Stream {
	t.Helper()
	streams := make([]libcuda.Stream, n)
	for i := range streams {
		streams[i] = testenv.NewStream(t)
	}
	g.Hold(t, streams[0])
	var held libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&held, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	t.Cleanup(func() { testenv.Must(t, libcuda.EventDestroy(held)) })
	testenv.Must(t, libcuda.EventRecord(held, streams[0]))
	for _, s := range streams[1:] {
		testenv.Must(t, libcuda.StreamWaitEvent(s, held, 0))
	}
	return streams
}

// startWaits starts one goroutine a stream (streams may repeat), each in
// p.Stream with its context from ctxs (or Background), and returns their
// results in stream order.
func startWaits(p sync.Policy, streams []libcuda.Stream, ctxs []context.Context) []<-chan error {
	res := make([]<-chan error, len(streams))
	for i, s := range streams {
		ctx := context.Background()
		if ctxs != nil {
			ctx = ctxs[i]
		}
		res[i] = testenv.WaitAsync(func() error { return p.Stream(ctx, 0, s) })
	}
	return res
}

// pollerBound checks, over some rounds while the waits are held, that the
// poller queried each of targets at most once a round. The counters are
// read between rounds or in one: a round counts itself when it starts and
// its queries when it ends, so one more round's queries may show.
func pollerBound(t *testing.T, targets int) {
	t.Helper()
	r0, q0 := sync.PollerCounts()
	testenv.Eventually(t, "three poller rounds", func() bool {
		r, _ := sync.PollerCounts()
		return r >= r0+3
	})
	r1, q1 := sync.PollerCounts()
	if rounds, queries := r1-r0, q1-q0; queries > (rounds+1)*int64(targets) {
		t.Errorf("the poller made %d queries in %d rounds for %d targets: more than one a target a round", queries, rounds, targets)
	} else if queries == 0 {
		t.Errorf("the poller made no query in %d rounds", rounds)
	} else {
		t.Logf("%d queries in %d rounds for %d targets", queries, rounds, targets)
	}
}

// M goroutines each wait on a held stream of its own; the waits past the
// helpers go to the shared poller, which queries each stream once a round;
// all return once the gate opens, and nothing stays behind.
func TestThousandWaitersShareOnePoller(t *testing.T) {
	testenv.OnPrimary(t, 0)
	m := 1000
	if testing.Short() {
		m = 200
	}
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, m)
	b := takeBaseline(t)
	res := startWaits(sync.DefaultPolicy, streams, nil)
	testenv.Eventually(t, "every wait on a helper or the poller", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers+st.PolledWaits == m
	})
	if st := sync.ReadStats(); st.ActiveHelpers > sync.MaxHelpers || st.PolledWaits < m-sync.MaxHelpers {
		t.Fatalf("%d waits: %+v; want at most %d on helpers and the rest polled", m, st, sync.MaxHelpers)
	}
	pollerBound(t, sync.ReadStats().PolledWaits)
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d to return after the gate opened", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}

// Waits on the same target share its query: one a round, whatever their
// number.
func TestWaitsOnOneTargetShareItsQuery(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const targets, each = 5, 60
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, targets)
	b := takeBaseline(t)
	var waits []libcuda.Stream
	for range each {
		waits = append(waits, streams...)
	}
	polling := sync.Policy{Mode: sync.Polling}
	res := startWaits(polling, waits, nil)
	testenv.Eventually(t, "every wait on the poller", func() bool { return sync.ReadStats().PolledWaits == len(waits) })
	pollerBound(t, targets)
	g.Open()
	for i, ch := range res {
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d to return", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}

// Some waits among many are cancelled: they return context.Canceled at
// once, leave the poller, and the others go on waiting until their work
// ends.
func TestCancelSomePolledWaitsAmongMany(t *testing.T) {
	testenv.OnPrimary(t, 0)
	const m = 300
	g := testenv.NewGate(t)
	streams := heldStreams(t, g, m)
	b := takeBaseline(t)
	ctxs := make([]context.Context, m)
	cancels := make([]context.CancelFunc, m)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
		defer cancels[i]()
	}
	// Auto mode: some on helpers, the rest on the poller; both cancel.
	res := startWaits(sync.DefaultPolicy, streams, ctxs)
	testenv.Eventually(t, "every wait on a helper or the poller", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers+st.PolledWaits == m
	})
	cancelled := 0
	for i := 0; i < m; i += 3 {
		cancels[i]()
		cancelled++
	}
	for i := 0; i < m; i += 3 {
		if err := testenv.Recv(t, res[i], fmt.Sprintf("cancelled wait %d", i)); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait %d: %v, want context.Canceled", i, err)
		}
	}
	testenv.Eventually(t, "the cancelled waits gone from the poller and the helpers", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers+st.PolledWaits == m-cancelled
	})
	for i, ch := range res {
		if i%3 == 0 {
			continue
		}
		select {
		case err := <-ch:
			t.Fatalf("wait %d returned %v while its stream was held", i, err)
		default:
		}
	}
	g.Open()
	for i, ch := range res {
		if i%3 == 0 {
			continue
		}
		if err := testenv.Recv(t, ch, fmt.Sprintf("wait %d to return", i)); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	b.back(t)
}
