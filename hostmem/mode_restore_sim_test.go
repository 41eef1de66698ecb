//go:build !gpu

package hostmem_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A driver call that hostmem makes in relaxed capture mode may succeed
// while switching the thread's mode back fails after it. The registry must
// still record what the call did: a registration made is known (and ended
// by a later batch), one ended is forgotten. Otherwise the driver and the
// registry disagree: a wrap of the same memory later finds it registered
// by no one the registry knows (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
// seen in the soak), or memory stays pinned, counted as kept, though the
// driver has let it go.
//
// Each round makes one cuThreadExchangeStreamCaptureMode call of a wrap,
// free and drain of the same memory fail, in turn, and checks after it that
// the simulator holds as many registrations as hostmem counts, and that
// the memory wraps again.
func TestFailedModeRestoreKeepsRegistryAndDriverInStep(t *testing.T) {
	logged := testenv.CaptureErrors(t) // the failed restores are logged
	primary := onPrimary(t, 0)
	drain(t)
	const call = "cuThreadExchangeStreamCaptureMode"
	mem := make([]byte, 16384)
	before := hostmem.ReadStats()
	ranges := simStat(t, "registered_ranges")
	var wrapFailed, restoreFailed bool
	for skip := range 12 {
		testenv.SimFailAfter(t, call, skip, 1, injected)
		b, err := hostmem.Wrap(primary, mem)
		if err == nil {
			err = b.Free()
		} else {
			wrapFailed = true
		}
		if err != nil && !errors.Is(err, injected) {
			t.Fatalf("round %d: %v, want nil or the injected failure", skip, err)
		}
		if err := hostmem.Drain(t.Context()); err != nil && !errors.Is(err, injected) {
			t.Fatalf("round %d: Drain: %v", skip, err)
		}
		simFailNext(t, call, 0, 0)
		// A failed restore leaves this thread in relaxed mode: back to global.
		mode := libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL
		must(t, libcuda.ThreadExchangeStreamCaptureMode(&mode))
		if mode == libcuda.CU_STREAM_CAPTURE_MODE_RELAXED {
			restoreFailed = true
		}
		must(t, hostmem.Drain(t.Context()))

		st := hostmem.ReadStats()
		kept := st.Kept - before.Kept
		if got := simStat(t, "registered_ranges") - ranges; got != int64(st.Registrations+kept) {
			t.Errorf("round %d: the simulator holds %d registrations more than before, hostmem %d (%+v)", skip, got, st.Registrations+kept, st)
		}
		b, err = hostmem.Wrap(primary, mem)
		if err != nil {
			t.Fatalf("round %d: wrapping the memory again: %v", skip, err)
		}
		must(t, b.Free())
		must(t, hostmem.Drain(t.Context()))
	}
	if !wrapFailed || !restoreFailed {
		t.Errorf("no round failed a wrap (%v) or left this thread's mode relaxed (%v): the failures missed their calls", wrapFailed, restoreFailed)
	}
	for _, m := range logged.Messages() {
		t.Log(m)
	}
}
