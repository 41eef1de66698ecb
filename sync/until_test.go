package sync_test

import (
	"context"
	"errors"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/sync"
)

// Until returns once its function says done, with the function's error
// when it fails, and with ctx's error when ctx ends first; the function
// is not called after Until has returned.
func TestUntilEndsOnDoneErrorOrContext(t *testing.T) {
	var n atomic.Int32
	if err := sync.Until(context.Background(), "three calls", func() (bool, error) { return n.Add(1) >= 3, nil }); err != nil {
		t.Fatalf("Until: %v", err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("the function ran %d times, want 3", got)
	}
	boom := errors.New("boom")
	if err := sync.Until(context.Background(), "a failure", func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("Until with a failing function: %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu gosync.Mutex
	returned := false
	var late atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- sync.Until(ctx, "never", func() (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				late.Add(1)
			}
			return false, nil
		})
	}()
	time.Sleep(5 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Until after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Until did not return after its context ended")
	}
	mu.Lock()
	returned = true
	mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	if late.Load() != 0 {
		t.Errorf("the function ran %d times after Until returned", late.Load())
	}
}
