//go:build !gpu

package sync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

var blocking = sync.Policy{Mode: sync.Blocking}

// A sync.Context wait whose context has ended starts no cuCtxSynchronize:
// the armed fault is still there for the test's own call afterwards.
func TestCancelledContextWaitStartsNoSynchronize(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	testenv.SimFailNext(t, "cuCtxSynchronize", 1, libcuda.CUDA_ERROR_UNKNOWN)
	for range 20 {
		if err := sync.Context(ctx, cu); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Context wait: %v, want context.Canceled", err)
		}
	}
	if err := libcuda.CtxSynchronize(); !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("cuCtxSynchronize after the cancelled waits: %v; want the armed fault, untouched by them", err)
	}
	if st := sync.ReadStats(); st.ActiveHelpers != 0 {
		t.Fatalf("after cancelled waits: %+v, want no active helper", st)
	}
}

// A Context wait cancelled while its synchronize blocks returns at once.
func TestContextWaitCancelledInFlightReturns(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- sync.Context(ctx, cu) }()
	testenv.Eventually(t, "the context wait on a helper", func() bool { return sync.ReadStats().BlockingHelpers == 1 })
	cancel()
	if err := testenv.Recv(t, res, "the cancelled context wait"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Context wait: %v", err)
	}
	if st := sync.ReadStats(); st.ActiveHelpers != 0 || st.AbandonedHelpers != 1 {
		t.Fatalf("after the cancelled wait: %+v; want its helper abandoned", st)
	}
	g.Open()
	testenv.Eventually(t, "the abandoned helper to finish", func() bool { return sync.ReadStats().AbandonedHelpers == 0 })
}

// Cancelled waits on work that never completes give their helpers' places
// away: a later wait gets a helper and finishes, and both counts stay
// bounded.
func TestAbandonedHelpersDoNotStarveLaterWaits(t *testing.T) {
	testenv.OnPrimary(t, 0)
	stuck := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, stuck)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(ev)) }()
	testenv.Must(t, libcuda.EventRecord(ev, stuck))

	const n = sync.MaxHelpers + sync.MaxAbandoned + 4
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- blocking.Event(ctx, ev) }()
		if i < sync.MaxHelpers+sync.MaxAbandoned {
			testenv.Eventually(t, "the wait on a helper", func() bool {
				return sync.ReadStats().BlockingHelpers == i+1
			})
		}
		cancel()
		if err := testenv.Recv(t, res, "a cancelled wait"); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait %d: %v, want context.Canceled", i, err)
		}
		if st := sync.ReadStats(); st.ActiveHelpers > sync.MaxHelpers || st.AbandonedHelpers > sync.MaxAbandoned {
			t.Fatalf("after %d cancelled waits: %+v; want at most %d active and %d abandoned", i+1, st, sync.MaxHelpers, sync.MaxAbandoned)
		}
	}
	st := sync.ReadStats()
	if st.AbandonedHelpers != sync.MaxAbandoned {
		t.Fatalf("after %d cancelled waits on work that never ends: %+v; want %d abandoned", n, st, sync.MaxAbandoned)
	}
	t.Logf("stats with every place taken: %+v", st)

	// A wait on other work still finishes, by polling when every place
	// is taken.
	other := testenv.NewStream(t)
	g2 := testenv.NewGate(t)
	g2.Hold(t, other)
	res := make(chan error, 1)
	go func() { res <- sync.Stream(context.Background(), 0, other) }()
	g2.Open()
	testenv.Must(t, testenv.Recv(t, res, "a wait beside the stuck helpers"))

	g.Open()
	testenv.Eventually(t, "every helper to finish", func() bool {
		st := sync.ReadStats()
		return st.ActiveHelpers == 0 && st.AbandonedHelpers == 0
	})
}

// With fewer abandoned helpers than the bound, a later blocking wait gets a
// helper of its own at once, while the abandoned ones still block.
func TestCancelledWaitsGiveTheirPlaceToTheNext(t *testing.T) {
	testenv.OnPrimary(t, 0)
	stuck := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, stuck)
	var ev libcuda.Event
	testenv.Must(t, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
	defer func() { testenv.Must(t, libcuda.EventDestroy(ev)) }()
	testenv.Must(t, libcuda.EventRecord(ev, stuck))
	ctx, cancel := context.WithCancel(context.Background())
	var results []chan error
	for range sync.MaxHelpers {
		res := make(chan error, 1)
		results = append(results, res)
		go func() { res <- blocking.Event(ctx, ev) }()
	}
	testenv.Eventually(t, "every helper blocking", func() bool { return sync.ReadStats().BlockingHelpers == sync.MaxHelpers })
	cancel()
	for _, res := range results {
		if err := testenv.Recv(t, res, "a cancelled wait"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
	}
	other := testenv.NewStream(t)
	g2 := testenv.NewGate(t)
	g2.Hold(t, other)
	res := make(chan error, 1)
	go func() { res <- blocking.Stream(context.Background(), 0, other) }()
	testenv.Eventually(t, "the new wait on a helper of its own", func() bool { return sync.ReadStats().ActiveHelpers == 1 })
	g2.Open()
	testenv.Must(t, testenv.Recv(t, res, "the wait after the cancelled ones"))
	g.Open()
	testenv.Eventually(t, "the abandoned helpers to finish", func() bool { return sync.ReadStats().AbandonedHelpers == 0 })
}

// A helper whose thread cannot enter relaxed mode ends; its wait polls
// instead, the failure is logged once, and later waits on new helpers
// succeed.
func TestFailedModeSwitchDoesNotPoisonHelpers(t *testing.T) {
	errs := testenv.CaptureErrors(t)
	testenv.OnPrimary(t, 0)
	testenv.Eventually(t, "idle helpers to exit", func() bool { return sync.ReadStats().HelperThreads == 0 })
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, s)
	testenv.SimFailNext(t, "cuThreadExchangeStreamCaptureMode", 1, libcuda.CUDA_ERROR_UNKNOWN)
	res := make(chan error, 1)
	go func() { res <- blocking.Stream(context.Background(), 0, s) }()
	testenv.Eventually(t, "the failed helper's log", func() bool { return len(errs.Messages()) == 1 })
	g.Open()
	testenv.Must(t, testenv.Recv(t, res, "the wait whose helper failed"))
	for i := range 50 {
		s := testenv.NewStream(t)
		g := testenv.NewGate(t)
		g.Hold(t, s)
		res := make(chan error, 1)
		go func() { res <- blocking.Stream(context.Background(), 0, s) }()
		testenv.Eventually(t, "the wait on a helper", func() bool { return sync.ReadStats().ActiveHelpers == 1 })
		g.Open()
		if err := testenv.Recv(t, res, "a later wait"); err != nil {
			t.Fatalf("wait %d after the failed mode switch: %v", i, err)
		}
	}
	if m := errs.Messages(); len(m) != 1 {
		t.Fatalf("logged %q; want the one failure", m)
	}
}
