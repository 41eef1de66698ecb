package hostmem_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
)

// Wrapped Go memory stays reachable and pinned while it is registered: a
// retired registration keeps it, and so does one whose unregister is in
// progress; only once the unregister has returned may the collector take
// it. The unregister is held by the device fence it makes (a stream the
// test holds with a gate), and the collector runs meanwhile.
func TestGoMemoryStaysReachableUntilItsUnregisterReturns(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	idle, busy := testenv.NewStream(t), testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)

	var collected atomic.Bool
	func() {
		data := make([]int64, 1<<14)
		runtime.AddCleanup(&data[0], func(b *atomic.Bool) { b.Store(true) }, &collected)
		buf, err := hostmem.Wrap(cu, data)
		testenv.Must(t, err)
		testenv.Must(t, buf.Use(idle))
		testenv.MustBounded(t, "buf.Free", buf.Free)
	}()
	testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
	if st := hostmem.ReadStats(); st.Retired != 1 {
		t.Fatalf("after Wait: %+v, want the registration retired", st)
	}
	gc := func() {
		runtime.GC()
		runtime.GC()
	}
	gc()
	if collected.Load() {
		t.Fatal("the Go memory of a retired registration was collected while registered")
	}

	// Trim unregisters it; the unregister waits for the held stream.
	g.Hold(t, busy)
	fences, _ := testenv.Stat(t, "fences")
	trimmed := testenv.Go(func() { hostmem.Trim() })
	testenv.WaitStat(t, "the unregister's fence", "fences", fences)
	gc()
	if collected.Load() {
		t.Fatal("the Go memory was collected while its unregister was in progress")
	}
	select {
	case <-trimmed:
		t.Fatal("Trim returned while the device's work was held")
	default:
	}
	g.Open()
	testenv.Recv(t, trimmed, "Trim")
	if st := hostmem.ReadStats(); st.Registrations != 0 {
		t.Fatalf("after Trim: %+v", st)
	}
	testenv.Eventually(t, "the Go memory to be collected after its unregister", func() bool {
		gc()
		return collected.Load()
	})
	memtest.Drain(t)
}
