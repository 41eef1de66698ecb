package sync

import (
	"errors"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// These tests hold a query in flight at will, with a target of their own
// whose query blocks until the test answers it: the orders that the
// simulator's calls are too quick to show are made certain.

// heldTarget's query reports its start (with its check argument) and
// returns what the test sends, or nil once the test has ended.
type heldTarget struct {
	name    string
	entered chan bool
	release chan error
}

func newHeldTarget(t *testing.T, name string) *heldTarget {
	h := &heldTarget{name: name, entered: make(chan bool, 16), release: make(chan error)}
	t.Cleanup(func() { close(h.release) })
	return h
}

func (h *heldTarget) query(check bool) error {
	h.entered <- check
	if err, ok := <-h.release; ok {
		return err
	}
	return nil
}

func (h *heldTarget) block() error   { return errors.New("held target: no blocking wait") }
func (h *heldTarget) String() string { return h.name }

// notYet gives a goroutine a moment to do what it must not, here close
// ch (a loaded machine can only make this miss a fault, never fail a
// right answer).
func notYet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s", what)
	case <-time.After(30 * time.Millisecond):
	}
}

// A query in flight in the caller's mode holds back a capture's start
// until it returns; a query made while the capture waits to start runs
// relaxed, with the capture check.
func TestQueryInFlightHoldsBackACapture(t *testing.T) {
	if n := CapturesInProgress(); n != 0 {
		t.Fatalf("%d captures in progress before the test", n)
	}
	h := newHeldTarget(t, "held")
	res := make(chan error, 1)
	go func() { res <- guardedQuery(h, 0) }()
	if check := testenv.Recv(t, h.entered, "the query to start"); check {
		t.Fatal("a query with no capture in progress checked its stream first")
	}
	started := make(chan *CaptureEntry, 1)
	go func() { started <- StartCapture() }()
	defer func() { testenv.Recv(t, started, "the capture to start").End() }()
	testenv.Eventually(t, "the capture to count", func() bool { return CapturesInProgress() == 1 })

	other := newHeldTarget(t, "other")
	res2 := make(chan error, 1)
	go func() { res2 <- guardedQuery(other, 0) }()
	if check := testenv.Recv(t, other.entered, "a query while the capture waits"); !check {
		t.Error("a query made while a capture waited to start ran in the caller's mode, unchecked")
	}
	other.release <- nil
	if err := testenv.Recv(t, res2, "the relaxed query"); err != nil {
		t.Fatalf("the relaxed query: %v", err)
	}

	select {
	case e := <-started:
		started <- e // for the deferred End
		t.Fatal("StartCapture returned while a query in the caller's mode was in flight")
	case <-time.After(30 * time.Millisecond):
	}
	h.release <- nil
	if err := testenv.Recv(t, res, "the held query"); err != nil {
		t.Fatalf("the held query: %v", err)
	}
}

// The shared poller's query is in flight like any other: a capture waits
// for it. A waiter that leaves while the poller queries its target waits
// for that query to return, and no query follows.
func TestCancelWaitsForThePollersQuery(t *testing.T) {
	h := newHeldTarget(t, "polled")
	w := shared.add(h, time.Millisecond, time.Time{})
	if check := testenv.Recv(t, h.entered, "the poller's query"); check {
		t.Fatal("the poller's query with no capture in progress checked its stream")
	}
	started := make(chan *CaptureEntry, 1)
	go func() { started <- StartCapture() }()
	defer func() { testenv.Recv(t, started, "the capture to start").End() }()
	testenv.Eventually(t, "the capture to count", func() bool { return CapturesInProgress() == 1 })
	cancelled := testenv.Go(w.cancel)
	notYet(t, cancelled, "cancel returned while the poller queried the wait's target")
	select {
	case e := <-started:
		started <- e
		t.Fatal("StartCapture returned while the poller's query was in flight")
	default:
	}
	// Not finished: the poller may query again before the cancel claims
	// the wait; after cancel has returned, it must not.
	h.release <- libcuda.CUDA_ERROR_NOT_READY
	for done := false; !done; {
		select {
		case <-cancelled:
			done = true
		case <-h.entered:
			h.release <- libcuda.CUDA_ERROR_NOT_READY
		case <-time.After(testenv.Timeout):
			t.Fatal("cancel did not return after the poller's query did")
		}
	}
	testenv.Eventually(t, "the poller to stop", func() bool { return !PollerRunning() })
	select {
	case <-h.entered:
		t.Fatal("the poller queried the target of a wait that had left")
	default:
	}
	select {
	case err := <-w.done:
		t.Fatalf("a result (%v) for a wait that left", err)
	default:
	}
}

// A waiter leaves just as the poller finds its target finished: the wait
// has exactly one result in its channel, and it is counted out of the
// polled waits once, not twice.
func TestCancelAsThePollerFinishesTheWait(t *testing.T) {
	testenv.Eventually(t, "no polled wait", func() bool { return polledWaits.Load() == 0 && !PollerRunning() })
	h := newHeldTarget(t, "finishing")
	w := shared.add(h, time.Millisecond, time.Time{})
	testenv.Recv(t, h.entered, "the poller's query")
	cancelled := testenv.Go(w.cancel)
	notYet(t, cancelled, "cancel returned while the poller queried the wait's target")
	h.release <- nil // finished
	testenv.Recv(t, cancelled, "cancel after the poller's query")
	testenv.Eventually(t, "the poller to stop", func() bool { return !PollerRunning() })
	if n := polledWaits.Load(); n != 0 {
		t.Fatalf("%d polled waits after the only one ended, want 0", n)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Fatalf("the finished wait's result: %v", err)
		}
	default:
		t.Fatal("no result for the wait whose target finished")
	}
	if len(w.done) != 0 {
		t.Fatal("a second result for one wait")
	}
}
