//go:build linux || windows

package hostmem_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
)

// BenchmarkHostmemCycle is the steady state of a wrap/use/free loop: the
// memory's registration is retired and revived, so no driver call
// registers or unregisters; allocs/op is what the cycle costs the GC.
func BenchmarkHostmemCycle(b *testing.B) {
	ctx := testenv.OnPrimary(b, 0)
	s := testenv.NewStream(b)
	mem := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := hostmem.Wrap(ctx, mem)
		testenv.Must(b, err)
		testenv.Must(b, buf.Use(s))
		testenv.Must(b, buf.Free())
	}
	b.StopTimer()
	testenv.Must(b, hostmem.Drain(context.Background()))
}

// A steady wrap/use/free loop costs the GC three small allocations a cycle
// (the buffer and runtime.AddCleanup's two): the state of a buffer whose
// release has ended is reused, and the reaper's rounds keep their scratch
// space and the stream's queue:
// each byte here makes the collector run, and its runs hold other
// goroutines' driver calls.
func TestWrapUseFreeLoopAllocations(t *testing.T) {
	testenv.NoErrorsLogged(t)
	ctx := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	mem := make([]byte, 64<<10)
	cycle := func() {
		buf, err := hostmem.Wrap(ctx, mem)
		testenv.Must(t, err)
		testenv.Must(t, buf.Use(s))
		testenv.Must(t, buf.Free())
	}
	// Rounds of cycles, each waited for, so that the count of pending
	// uses, and with it the reaper's queue, is the same however fast the
	// reaper keeps up on this machine.
	const round = 256
	rounds := func(k int) {
		for range k {
			for range round {
				cycle()
			}
			testenv.Must(t, hostmem.Wait(context.Background()))
		}
	}
	rounds(4) // the registration, the pooled events and the queue
	const n = 80 * round
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rounds(n / round)
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / n
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.2f allocations, %.0f bytes a cycle", allocs, bytes)
	maxAllocs, maxBytes := 3.5, 120.0
	if raceDetector { // sync.Pool drops a part of the states it is given
		maxAllocs, maxBytes = 4.5, 200
	}
	if allocs > maxAllocs || bytes > maxBytes {
		t.Errorf("%.2f allocations and %.0f bytes a cycle; want at most %.1f and %.0f", allocs, bytes, maxAllocs, maxBytes)
	}
	memtest.Drain(t)
}
