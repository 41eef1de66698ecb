package hostmem_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// Wrapping memory whose unregister is in progress waits for it and then
// registers the memory anew: reviving the registration being ended would
// leave the new buffer with memory the driver no longer has registered.
// The unregister is held by the device fence it makes (a stream the test
// holds with a gate); the new Wrap must return only after the gate opened,
// with the memory registered.
func TestWrapWaitsForAnUnregisterOfThatMemoryInProgress(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	idle, busy := testenv.NewStream(t), testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	data := make([]int64, 1<<12)

	buf, err := hostmem.Wrap(cu, data)
	testenv.Must(t, err)
	testenv.Must(t, buf.Use(idle))
	testenv.MustBounded(t, "buf.Free", buf.Free)
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	if st := hostmem.ReadStats(); st.Retired != 1 {
		t.Fatalf("after Wait: %+v, want the registration retired", st)
	}

	g.Hold(t, busy)
	var opened atomic.Bool
	fences, _ := testenv.Stat(t, "fences")
	trimmed := testenv.Go(func() { hostmem.Trim() })
	testenv.WaitStat(t, "the unregister's fence", "fences", fences)

	var again *hostmem.Buffer
	var wrapErr error
	wrapOpened := make(chan bool, 1)
	wrapped := testenv.Go(func() {
		again, wrapErr = hostmem.Wrap(cu, data)
		wrapOpened <- opened.Load()
	})
	// Give the Wrap the moment it needs to go wrong: a loaded machine can
	// only make this check miss a fault, never fail a right answer.
	select {
	case <-wrapped:
		t.Errorf("Wrap of memory whose unregister is in progress returned before it ended (%v)", wrapErr)
	case <-trimmed:
		t.Fatal("Trim returned while the device's work was held")
	case <-time.After(20 * time.Millisecond):
	}
	opened.Store(true)
	g.Open()
	testenv.Recv(t, trimmed, "Trim")
	testenv.Recv(t, wrapped, "the second Wrap")
	if !testenv.Recv(t, wrapOpened, "the second Wrap's order") {
		t.Error("the second Wrap returned while the unregister of its memory was in progress")
	}
	testenv.Must(t, wrapErr)
	t.Cleanup(func() { testenv.MustBounded(t, "again.Free", again.Free) })
	var flags uint32
	if err := libcuda.MemHostGetFlags(&flags, again.Pointer()); err != nil {
		t.Fatalf("the wrapped memory is not registered with the driver: cuMemHostGetFlags = %v", err)
	}
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("after the second Wrap: %+v, want one registration", st)
	}
}
