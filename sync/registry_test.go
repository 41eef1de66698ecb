package sync_test

import (
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/sync"
)

// An entry that StartCapture did not return (the zero value, or a nil
// pointer) ends nothing and registers nothing: the count of captures in
// progress, which is a field of the word that every query reads, stays as
// it was, and IfNoCapture goes on running its function.
func TestEndOfAnEntryNotStartedChangesNothing(t *testing.T) {
	before := sync.CapturesInProgress()
	if before != 0 {
		t.Fatalf("%d captures in progress before the test", before)
	}
	var zero sync.CaptureEntry
	zero.Begun(42, 0x42, "zero")
	if v, ok := sync.LookupCapture(42, 0x42); ok {
		t.Errorf("a zero entry's Begun made it findable: %v", v)
	}
	zero.End()
	zero.End()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("End and Begun of a nil entry panicked: %v", r)
			}
		}()
		var none *sync.CaptureEntry
		none.Begun(43, 0x43, "nil")
		none.End()
	}()
	if n := sync.CapturesInProgress(); n != before {
		// Put the word back for the tests that follow: one more start
		// undoes the extra end.
		for range 2 {
			if sync.CapturesInProgress() == before {
				break
			}
			sync.StartCapture()
		}
		t.Fatalf("%d captures in progress after ending an entry not started, %d before", n, before)
	}
	if ran, err := sync.IfNoCapture(func() error { return nil }); !ran || err != nil {
		t.Fatalf("IfNoCapture after ending an entry not started = %v, %v; want true, nil", ran, err)
	}
	// A real capture still counts, once.
	e := sync.StartCapture()
	if n := sync.CapturesInProgress(); n != before+1 {
		t.Errorf("%d captures in progress with one started, want %d", n, before+1)
	}
	e.End()
	e.End()
	if n := sync.CapturesInProgress(); n != before {
		t.Errorf("%d captures in progress after the capture ended twice, want %d", n, before)
	}
}

// The captures admitted are a field of the registry's word, which holds
// MaxCaptures at most: a StartCapture past that waits until one ends, as it
// waits for calls in flight, rather than wrapping the count to zero (then
// every query would run in the caller's mode during the captures, and
// IfNoCapture would run its function).
func TestCapturesPastTheFieldWaitForOneToEnd(t *testing.T) {
	if n := sync.CapturesInProgress(); n != 0 {
		t.Fatalf("%d captures in progress before the test", n)
	}
	entries := make([]*sync.CaptureEntry, 0, sync.MaxCaptures)
	ended := 0
	var extra chan *sync.CaptureEntry
	defer func() {
		// The admitted ones end first: the extra start may wait for that.
		for _, e := range entries[ended:] {
			e.End()
		}
		if extra != nil {
			testenv.Recv(t, extra, "the capture past the field to start").End()
		}
	}()
	for range sync.MaxCaptures {
		entries = append(entries, sync.StartCapture())
	}
	if n := sync.CapturesInProgress(); n != sync.MaxCaptures {
		t.Fatalf("%d captures in progress, want %d", n, sync.MaxCaptures)
	}
	extra = make(chan *sync.CaptureEntry, 1)
	go func() { extra <- sync.StartCapture() }()
	// Whether the extra start has returned or not, the count must not
	// read less than the captures admitted.
	for i := range 100 {
		if n := sync.CapturesInProgress(); n < sync.MaxCaptures {
			t.Fatalf("check %d: %d captures in progress with %d admitted at least", i, n, sync.MaxCaptures)
		}
		if ran, _ := sync.IfNoCapture(func() error { return nil }); ran {
			t.Fatalf("check %d: IfNoCapture ran its function with %d captures admitted", i, sync.MaxCaptures)
		}
		time.Sleep(100 * time.Microsecond)
	}
	select {
	case e := <-extra:
		extra <- e // for the deferred End
		t.Fatalf("StartCapture returned with %d captures in progress already, %d now", sync.MaxCaptures, sync.CapturesInProgress())
	default:
	}
	entries[0].End()
	ended = 1
	e := testenv.Recv(t, extra, "the capture past the field to start once one ended")
	extra <- e
	if n := sync.CapturesInProgress(); n != sync.MaxCaptures {
		t.Fatalf("%d captures in progress after one ended and the waiting one started, want %d", n, sync.MaxCaptures)
	}
	t.Logf("%d captures admitted at once", sync.MaxCaptures)
}

// One entry serves captures one after another (StartCaptureWith): each
// counts once while in progress, is findable under its own id only, and an
// entry started again while in progress is ended first, so the count does
// not drift.
func TestStartCaptureWithReusesTheEntry(t *testing.T) {
	if n := sync.CapturesInProgress(); n != 0 {
		t.Fatalf("%d captures in progress before the test", n)
	}
	var e sync.CaptureEntry
	for i := range uint64(3) {
		if got := sync.StartCaptureWith(&e); got != &e {
			t.Fatalf("StartCaptureWith returned %p, not the entry given (%p)", got, &e)
		}
		if n := sync.CapturesInProgress(); n != 1 {
			t.Fatalf("capture %d: %d in progress, want 1", i, n)
		}
		e.Begun(100+i, 0x100, i)
		if v, ok := sync.LookupCapture(100+i, 0); !ok || v != i {
			t.Fatalf("capture %d: LookupCapture = %v, %v", i, v, ok)
		}
		if i > 0 {
			if v, ok := sync.LookupCapture(100+i-1, 0x999); ok {
				t.Fatalf("capture %d: the previous capture's id still finds %v", i, v)
			}
		}
		if i < 2 {
			e.End()
			if n := sync.CapturesInProgress(); n != 0 {
				t.Fatalf("capture %d ended: %d in progress", i, n)
			}
		}
	}
	// Started again while in progress: the last capture is ended first.
	sync.StartCaptureWith(&e)
	if n := sync.CapturesInProgress(); n != 1 {
		t.Fatalf("an entry started again while in progress: %d captures in progress, want 1", n)
	}
	if _, ok := sync.LookupCapture(102, 0x999); ok {
		t.Fatal("the capture ended by the new start is still findable")
	}
	e.End()
	e.End()
	if n := sync.CapturesInProgress(); n != 0 {
		t.Fatalf("after the last End: %d captures in progress", n)
	}
}
