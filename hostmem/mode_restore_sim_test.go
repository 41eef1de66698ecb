//go:build !gpu

package hostmem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// A driver call that hostmem makes in relaxed capture mode may succeed
// while switching the thread's mode back fails after it. hostmem must
// still account for what the call did: a registration made is recorded
// (and ended by a later batch), one ended is forgotten, an allocation made
// is freed. Otherwise the driver and the registry disagree: a wrap of the
// same memory later finds it registered by no one the registry knows
// (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, seen in the soak), memory
// stays pinned, counted as kept, though the driver has let it go, or a
// pinned allocation leaks.
//
// Round i wraps (or allocates), frees and drains new memory with the i-th
// cuThreadExchangeStreamCaptureMode call from then on failing (entering
// relaxed mode or restoring the mode, around the register or allocation
// and then the unregister or free), and checks after it that the simulator
// holds as many registrations (or pinned allocations) more than before the
// round as hostmem counts kept, and that wrapped memory wraps again.
func TestFailedModeRestoreKeepsRegistryAndDriverInStep(t *testing.T) {
	// By design the failed rounds keep their registrations and allocations for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	primary := testenv.OnPrimary(t, 0)
	t.Run("Wrap", func(t *testing.T) {
		modeRestoreRounds(t, "registered_ranges", true, func() (*hostmem.Buffer, []byte, error) {
			mem := make([]byte, 16384) // new: a registration kept after a failure keeps its memory
			b, err := hostmem.Wrap(primary, mem)
			return b, mem, err
		})
	})
	t.Run("Alloc", func(t *testing.T) {
		modeRestoreRounds(t, "live_host_allocations", false, func() (*hostmem.Buffer, []byte, error) {
			b, err := hostmem.Alloc(primary, 16384)
			return b, nil, err
		})
	})
}

// modeRestoreRounds runs the rounds of
// TestFailedModeRestoreKeepsRegistryAndDriverInStep with make, comparing
// the simulator's counter stat with hostmem's; with rewrap, the memory
// make returns is wrapped again after each round.
func modeRestoreRounds(t *testing.T, stat string, rewrap bool, make func() (*hostmem.Buffer, []byte, error)) {
	const call = "cuThreadExchangeStreamCaptureMode"
	logged := testenv.CaptureErrors(t) // the failed restores are logged
	primary := testenv.OnPrimary(t, 0) // this subtest's goroutine: its own locked thread
	memtest.Drain(t)
	made, restores := false, 0
	for skip := range 8 {
		seen := len(logged.Messages())
		before, count := hostmem.ReadStats(), testenv.SimStat(t, stat)
		testenv.SimFailAfter(t, call, skip, 1, injected)
		b, mem, err := make()
		if err == nil {
			err = b.Free()
		} else {
			made = true
		}
		if err != nil && !errors.Is(err, injected) {
			t.Fatalf("round %d: %v, want nil or the injected failure", skip, err)
		}
		if err := hostmem.Drain(testenv.Context(t)); err != nil && !errors.Is(err, injected) {
			t.Fatalf("round %d: Drain: %v", skip, err)
		}
		testenv.SimFailNext(t, call, 0, 0)
		// A failed restore leaves this thread in relaxed mode: back to global.
		mode := libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL
		testenv.Must(t, libcuda.ThreadExchangeStreamCaptureMode(&mode))
		testenv.Must(t, hostmem.Drain(testenv.Context(t)))
		for _, m := range logged.Messages()[seen:] {
			if strings.Contains(m, "restoring capture mode") {
				restores++
			}
		}

		st := hostmem.ReadStats()
		if got, want := testenv.SimStat(t, stat)-count, int64(st.Registrations+st.Kept-before.Kept); got != want {
			t.Errorf("round %d: the simulator's %s grew by %d, hostmem's registrations and kept ones by %d (%+v)", skip, stat, got, want, st)
		}
		if rewrap {
			b, err := hostmem.Wrap(primary, mem)
			if err != nil {
				t.Fatalf("round %d: wrapping the memory again: %v", skip, err)
			}
			testenv.MustBounded(t, "b.Free", b.Free)
			testenv.Must(t, hostmem.Drain(testenv.Context(t)))
		}
	}
	// The restore after the register or allocation and the one after the
	// unregister or free, at least, failed.
	if !made || restores < 2 {
		t.Errorf("made failed: %v; %d restores of the mode failed, want 2 or more: the failures missed their calls", made, restores)
	}
}
