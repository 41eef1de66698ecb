//go:build !gpu

package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Free of managed memory used on a held stream waits for that stream,
// then frees it (the simulator's live allocations).
func TestManagedFreeWaitsForItsStreams(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	// Earlier tests' stream-ordered frees end first.
	testenv.Must(t, f.ctx.Sync(testenv.Context(t)))
	before := testenv.SimStat(t, "live_allocations")
	m, err := cuda.AllocManaged[int32](f.ctx, 256, cuda.AttachGlobal)
	testenv.Must(t, err)
	gate := testenv.NewGate(t)
	gate.Hold(t, s.Raw())
	testenv.Must(t, s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), m.Arg(), cuda.Uint64(256)))
	testenv.MustBounded(t, "m.Free", m.Free)
	if n := testenv.SimStat(t, "live_allocations"); n != before+1 {
		t.Fatalf("the managed memory was freed while its kernel is held: %d live allocations, want %d", n, before+1)
	}
	gate.Open()
	testenv.Eventually(t, "the managed memory freed after its kernel",
		func() bool { return testenv.SimStat(t, "live_allocations") == before })
}
