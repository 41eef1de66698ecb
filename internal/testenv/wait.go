package testenv

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// A test never waits without a bound: every call that may block (on a
// lock, a channel, the driver: Close, Free, a synchronize, a Wait, a
// receive, and any call after an error path that may have kept a lock)
// runs under one of the helpers here, which fail the test after Timeout
// with the stack of what is stuck, instead of hanging the binary:
//
//	testenv.Bounded(t, "Close", func() { testenv.Must(t, h.Close()) })
//	err := testenv.BoundedErr(t, "Close after Close", h.Close)
//	v := testenv.Recv(t, ch, "the event")
//
// Behind them, Main's watchdog (package harness) ends a binary still
// running after harness.DefaultWatchdog with every goroutine's stack.

// Bounded runs f on a goroutine of its own and waits for it, at most
// Timeout: past that it fails t with f's stack (where f is stuck) and
// leaves f behind. A t.Fatal in f (Must) stops the test here too. what
// names the call in the failure. f runs on another goroutine, so on
// another OS thread than a locked caller's: bound the calls that need no
// particular thread (package cuda's, graph's and hostmem's values, the
// driver's destroys and synchronizes of a handle), not a call that relies
// on the caller's current context or capture mode.
func Bounded(t testing.TB, what string, f func()) {
	t.Helper()
	boundedFor(t, Timeout, what, f)
}

// boundedFor is Bounded with its limit.
func boundedFor(t testing.TB, limit time.Duration, what string, f func()) {
	t.Helper()
	type result struct{ finished bool }
	done := make(chan result, 1)
	ids := make(chan uint64, 1)
	go func() {
		ids <- goroutineID()
		finished := false
		defer func() { done <- result{finished} }()
		f()
		finished = true
	}()
	id := <-ids
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		if !r.finished {
			t.FailNow() // f failed t and ended its goroutine
		}
	case <-timer.C:
		t.Fatalf("%s did not return within %v (blocked on a lock, a channel or the driver?); its goroutine:\n%s",
			what, limit, goroutineStack(id))
	}
}

// BoundedErr is Bounded for a call that returns an error, which it returns.
func BoundedErr(t testing.TB, what string, f func() error) error {
	t.Helper()
	var err error
	Bounded(t, what, func() { err = f() })
	return err
}

// MustBounded is Must(t, BoundedErr(t, what, f)): for the calls that must
// succeed and may block, such as a Close or a Free.
func MustBounded(t testing.TB, what string, f func() error) {
	t.Helper()
	if err := BoundedErr(t, what, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// CleanupBounded registers f as a cleanup of t, run under Bounded; an error
// of f fails t. For the Close or Free that ends what a test made.
func CleanupBounded(t testing.TB, what string, f func() error) {
	t.Cleanup(func() {
		if err := BoundedErr(t, what, f); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

// goroutineID is the calling goroutine's number, as its stack shows it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// goroutineStack is the stack of goroutine id, or every goroutine's when
// it cannot be found.
func goroutineStack(id uint64) []byte {
	all := harness.AllStacks()
	head := []byte(fmt.Sprintf("goroutine %d [", id))
	for _, g := range bytes.Split(all, []byte("\n\n")) {
		if bytes.HasPrefix(g, head) {
			return g
		}
	}
	return all
}

// Recv receives from ch, or fails t after Timeout, naming what it waited
// for.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("gave up after %v waiting for %s; every goroutine:\n%s", Timeout, what, harness.AllStacks())
		panic("unreachable")
	}
}

// Eventually polls cond until it holds, or fails t after Timeout, naming
// what it waited for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for d := 10 * time.Microsecond; !cond(); d = min(2*d, 5*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s; every goroutine:\n%s", Timeout, what, harness.AllStacks())
		}
		time.Sleep(d)
	}
}

// Go runs f on a new goroutine and returns a channel closed when f returns.
// A t.Fatal in f ends the goroutine, not the test: wait for the channel with
// Recv, and the test fails if f did not finish.
func Go(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// WaitAsync runs wait on a new goroutine and returns its result channel
// (buffered: the goroutine never blocks on it).
func WaitAsync(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

// StillWaiting checks that ch delivers nothing while the work it waits
// for is held: it gives the wait a moment to return wrongly (a loaded
// machine can only make this check miss a fault, never fail a right
// answer).
func StillWaiting(t testing.TB, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned %v before the work ended", what, err)
	case <-time.After(30 * time.Millisecond):
	}
}

// Finished checks that ch delivers nil within Timeout.
func Finished(t testing.TB, what string, ch <-chan error) {
	t.Helper()
	if err := Recv(t, ch, what+" to return after the work ended"); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Context returns a context that ends after three Timeouts, or when the
// test ends: for the waits a test makes on its own goroutine, so that a
// wait that never returns fails the test instead of hanging it.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout)
	t.Cleanup(cancel)
	return ctx
}
