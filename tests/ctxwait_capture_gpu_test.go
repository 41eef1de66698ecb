//go:build gpu

package tests

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// TestCapturesBesideContextWaits starts 10,000 global-mode captures while a
// context wait (sync.Context, cuCtxSynchronize on a helper thread) of the
// same context is starting or blocked on a busy stream, and counts the
// captures invalidated (there must be none) and the context synchronizes
// the driver refused (none either). It logs those counts and the longest a
// capture took (sync's entry bound, 10ms, plus the capture itself), the
// figure to read, not to assert: nothing here is timed.
//
// Two kinds of trial: "starting" ones begin a capture at a random moment
// from 0 to 12ms after a new context wait was started (before its
// admission, inside sync's entry bound, or just past it); "blocked" ones
// begin captures one after another while one context wait stays blocked.
func TestCapturesBesideContextWaits(t *testing.T) {
	const starting, blocked, perBlocked = 2_000, 8_000, 500
	cu := testenv.OnPrimary(t, 0)
	var dev libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&dev, 64))
	testenv.Fenced(t, func() { testenv.Must(t, libcuda.MemFree(dev)) })
	busy := testenv.NewStream(t)
	s := testenv.NewStream(t)
	gate := testenv.NewGate(t)
	word := (*uint32)(gate.Host())
	var round uint32
	// hold makes busy wait until the gate's word reaches the next round;
	// open lets it go.
	hold := func() {
		round++
		testenv.Must(t, libcuda.StreamWaitValue32(busy, gate.Dev(), round, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
	}
	open := func() { atomic.StoreUint32(word, round) }
	t.Cleanup(func() {
		// Past every round (the gate's own Open writes 1), and out of the
		// stream before the gate's memory is freed.
		atomic.StoreUint32(word, ^uint32(0))
		testenv.Must(t, libcuda.StreamSynchronize(busy))
	})

	base := sync.ReadStats()
	var invalidated, refusedAtAdmission, besideWaits int
	var longest time.Duration
	capture := func() {
		start := time.Now()
		g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			return libcuda.MemsetD8Async(dev, 7, 64, s)
		})
		longest = max(longest, time.Since(start))
		switch {
		case errors.Is(err, graph.ErrInvalidated):
			invalidated++
		case err != nil:
			t.Fatalf("capture: %v", err)
		default:
			testenv.MustBounded(t, "g.Destroy", g.Destroy)
		}
	}
	contextWait := func() <-chan error {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
		return testenv.WaitAsync(func() error { defer cancel(); return sync.Context(ctx, cu) })
	}
	finish := func(waited <-chan error) {
		open()
		switch err := testenv.Recv(t, waited, "the context wait"); {
		case errors.Is(err, sync.ErrCapturing):
			refusedAtAdmission++ // the capture was registered first: no driver call
		case err != nil:
			t.Fatalf("context wait: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(23, 8))
	for range starting {
		hold()
		waited := contextWait()
		offset := time.Duration(rng.Int64N(int64(12 * time.Millisecond)))
		for begun := time.Now(); time.Since(begun) < offset; {
			runtime.Gosched()
		}
		capture()
		finish(waited)
	}
	for done := 0; done < blocked; done += perBlocked {
		hold()
		waited := contextWait()
		testenv.Eventually(t, "the context wait blocked in the driver", func() bool {
			st := sync.ReadStats()
			return st.ContextSyncs == 1 && st.BlockingHelpers == 1
		})
		for range perBlocked {
			capture()
		}
		if n := sync.ReadStats().ContextSyncs; n != 1 {
			t.Fatalf("the context wait ended while its stream was held (%d synchronizes in flight)", n)
		}
		finish(waited)
	}
	st := sync.ReadStats()
	besideWaits = int(st.CapturesBesideContextSyncs - base.CapturesBesideContextSyncs)
	refused := st.ContextSyncsRefused - base.ContextSyncsRefused
	t.Logf("captures beside context waits: %d trials (%d starting, %d blocked): %d captures invalidated, %d context synchronizes refused by the driver; longest capture %v; %d captures admitted beside a synchronize in flight, %d context waits refused before any call",
		starting+blocked, starting, blocked, invalidated, refused, longest, besideWaits, refusedAtAdmission)
	if invalidated != 0 || refused != 0 {
		t.Fatalf("%d captures invalidated, %d context synchronizes refused (want 0 and 0)", invalidated, refused)
	}
	if besideWaits < blocked {
		t.Fatalf("only %d captures were admitted beside a context synchronize in flight; the %d blocked trials alone should have been", besideWaits, blocked)
	}
}
