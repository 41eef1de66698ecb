package sync

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
)

// Work postponed until captures end never runs while a registered capture
// is in progress (issue 23 item 12), however the two meet: a capture
// admitted right after the Postpone, before the queue's goroutine has
// started or while it looks at the queue, and a capture that starts while
// the function runs. Each function looks at the captures in progress when
// it starts and after yielding; each capture, while admitted, counts the
// functions that run. Many rounds, for the orders to vary.
func TestPostponedWorkNeverRunsDuringACapture(t *testing.T) {
	const rounds = 2000
	var running, during atomic.Int32
	ran := make(chan struct{}, rounds)
	for range rounds {
		Postpone(func() {
			running.Add(1)
			if CapturesInProgress() != 0 {
				during.Add(1)
			}
			runtime.Gosched()
			if CapturesInProgress() != 0 {
				during.Add(1)
			}
			running.Add(-1)
			ran <- struct{}{}
		})
		e := StartCapture()
		if running.Load() != 0 {
			during.Add(1)
		}
		runtime.Gosched()
		if running.Load() != 0 {
			during.Add(1)
		}
		e.End()
	}
	for range rounds {
		testenv.Recv(t, ran, "a postponed function")
	}
	if n := during.Load(); n != 0 {
		t.Fatalf("postponed functions ran while a capture was admitted %d times", n)
	}
}

// A capture that starts while a postponed function runs is admitted only
// after the function has returned: the function, holding on until the
// capture start waits (or, were it not to wait, has been admitted), sees
// no capture in progress.
func TestACaptureStartingDuringAPostponedFunctionWaitsForIt(t *testing.T) {
	started := make(chan struct{})
	seen := make(chan int, 1)
	Postpone(func() {
		close(started)
		deadline := time.Now().Add(testenv.Timeout)
		for time.Now().Before(deadline) {
			reg.mu.Lock()
			entering := reg.entering
			reg.mu.Unlock()
			if entering > 0 || CapturesInProgress() > 0 {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		runtime.Gosched()
		seen <- CapturesInProgress()
	})
	testenv.Recv(t, started, "the postponed function to start")
	reported := make(chan struct{})
	admitted := testenv.WaitAsync(func() error {
		e := StartCapture()
		<-reported // the capture stays in progress until the function has told
		e.End()
		return nil
	})
	n := testenv.Recv(t, seen, "the postponed function")
	close(reported)
	if n != 0 {
		t.Fatalf("the postponed function saw %d captures admitted while it ran", n)
	}
	testenv.Finished(t, "the capture start after the postponed function", admitted)
}

// A postponed function that blocks counts as running, and the functions
// queued behind it as postponed, until it returns (issue 23 item 13):
// ReadStats shows it, from the registry's own flag that keeps captures
// from beginning meanwhile.
func TestABlockingPostponedFunctionCountsUntilItReturns(t *testing.T) {
	testenv.Eventually(t, "no postponed work", func() bool {
		s := ReadStats()
		return s.Postponed == 0 && s.PostponedRunning == 0
	})
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, 2)
	Postpone(func() {
		close(started)
		<-finish
		done <- struct{}{}
	})
	t.Cleanup(func() {
		select {
		case <-finish:
		default:
			close(finish)
		}
	})
	testenv.Recv(t, started, "the postponed function to start")
	Postpone(func() { done <- struct{}{} })
	if s := ReadStats(); s.PostponedRunning != 1 || s.Postponed != 1 {
		t.Fatalf("while a postponed function blocks with one queued behind it: PostponedRunning %d, Postponed %d; want 1, 1", s.PostponedRunning, s.Postponed)
	}
	close(finish)
	testenv.Recv(t, done, "the blocking postponed function")
	testenv.Recv(t, done, "the postponed function queued behind it")
	testenv.Eventually(t, "no postponed work once both returned", func() bool {
		s := ReadStats()
		return s.Postponed == 0 && s.PostponedRunning == 0
	})
}

// WaitPostponed waits for the queued functions, which wait for the capture
// in progress, and for what they queue in turn; a context that ends first
// ends the wait with its error.
func TestWaitPostponedWaitsForQueuedWorkAndWhatItQueues(t *testing.T) {
	e := StartCapture()
	var ran atomic.Int32
	Postpone(func() {
		ran.Add(1)
		Postpone(func() { ran.Add(1) })
	})
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := WaitPostponed(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitPostponed during a capture = %v, want the deadline", err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d postponed functions ran during the capture, want 0", n)
	}
	e.End()
	testenv.Must(t, WaitPostponed(testenv.Context(t)))
	if n := ran.Load(); n != 2 {
		t.Fatalf("after WaitPostponed %d postponed functions had run, want 2", n)
	}
	testenv.Must(t, WaitPostponed(testenv.Context(t))) // nothing queued: at once
}
