package harness

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Check fails on a count above its baseline, names it with its count, and
// passes once the count is back; Allow raises the baseline.
func TestCheckNamesWhatIsLiveAboveItsBaseline(t *testing.T) {
	reg.mu.Lock()
	saved := reg.counters
	reg.counters = nil
	reg.mu.Unlock()
	t.Cleanup(func() {
		reg.mu.Lock()
		reg.counters = saved
		reg.mu.Unlock()
	})
	var widgets int64
	var gadgets atomic.Int64 // set by another goroutine below
	Watch("widgets", func() (int64, error) { return widgets, nil })
	Watch("gadgets", func() (int64, error) { return gadgets.Load(), nil })
	if err := Check(0); err != nil {
		t.Fatalf("nothing live: %v", err)
	}
	widgets = 2
	gadgets.Store(1)
	err := Check(0)
	if err == nil || !strings.Contains(err.Error(), "2 widgets live") || !strings.Contains(err.Error(), "1 gadgets live") {
		t.Fatalf("two widgets and a gadget live: %v", err)
	}
	Allow("widgets", 2, "kept on purpose")
	if err := Check(0); err == nil || strings.Contains(err.Error(), "widgets") {
		t.Fatalf("two widgets allowed, a gadget live: %v", err)
	}
	widgets = 3
	if err := Check(0); err == nil || !strings.Contains(err.Error(), "3 widgets live, 2 allowed (kept on purpose)") {
		t.Fatalf("three widgets, two allowed: %v", err)
	}
	// A count that falls while Check waits passes.
	widgets = 0
	go func() {
		time.Sleep(20 * time.Millisecond)
		gadgets.Store(0)
	}()
	if err := Check(5 * time.Second); err != nil {
		t.Fatalf("the gadget was released during the wait: %v", err)
	}
	Watch("broken", func() (int64, error) { return 0, errors.New("no counter") })
	if err := Check(0); err == nil || !strings.Contains(err.Error(), "broken: no counter") {
		t.Fatalf("a counter that cannot be read: %v", err)
	}
}

// A baseline for what nothing counts (under -tags gpu, where the driver
// keeps no counts, a package's Allow stays) is no failure.
func TestAllowWithoutACounterPasses(t *testing.T) {
	reg.mu.Lock()
	saved := reg.counters
	reg.counters = nil
	reg.mu.Unlock()
	t.Cleanup(func() {
		reg.mu.Lock()
		reg.counters = saved
		reg.mu.Unlock()
	})
	Allow("events", 4, "counted on the simulator only")
	if err := Check(0); err != nil {
		t.Fatalf("a baseline with no counter: %v", err)
	}
}
