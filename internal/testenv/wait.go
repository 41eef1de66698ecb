package testenv

import (
	"context"
	"testing"
	"time"
)

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
		t.Fatalf("gave up after %v waiting for %s", Timeout, what)
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
			t.Fatalf("gave up after %v waiting for %s", Timeout, what)
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
