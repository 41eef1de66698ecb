//go:build !gpu

package cufft_test

import (
	"errors"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A plan turns cuFFT's own allocation off and gives it a work area from
// cuda.Alloc; Close frees it and destroys the plan.
func TestWorkAreaFromStreamOrderedMemory(t *testing.T) {
	f := newFixture(t)
	p, err := cufft.NewPlan(f.s, cufft.CUFFT_C2C, cufft.Shape{N: []int{16}, Batch: 4})
	testenv.Must(t, err)
	raw := int32(p.Raw())
	if testenv.FFTRandStat(t, "auto_allocation") != 0 {
		t.Errorf("cufftSetAutoAllocation was not turned off")
	}
	ws := p.WorkArea()
	if ws.Len() == 0 || testenv.FFTRandStat(t, "work_area") != int64(ws.DevicePtr()) {
		t.Fatalf("work area %v, the stand-in's %#x", ws, testenv.FFTRandStat(t, "work_area"))
	}
	testenv.Must(t, p.Close())
	if err := ws.Free(); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("the work area after Close: Free gives %v, want ErrFreed (Close freed it)", err)
	}
	testenv.Eventually(t, "the destroy", func() bool { return !testenv.PlanLive(t, raw) })
	if testenv.FFTRandStat(t, "exec_without_work_area") != 0 {
		t.Errorf("an execution reached the stand-in without a work area")
	}
}

// A shape error submits nothing.
func TestShapeErrorSubmitsNothing(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, cufft.CUFFT_R2C, cufft.Shape{N: []int{8, 8}})
	calls := testenv.FFTRandStat(t, "calls")
	if err := p.R2C(alloc[float32](t, f.s, 64), alloc[complex64](t, f.s, 39)); !errors.Is(err, cufft.ErrShape) {
		t.Fatalf("R2C into 39 for 8x8 (40 needed): %v", err)
	}
	testenv.Must(t, p.R2C(alloc[float32](t, f.s, 64), alloc[complex64](t, f.s, 40)))
	if n := testenv.FFTRandStat(t, "calls"); n != calls+1 {
		t.Errorf("%d executions reached the stand-in, want 1", n-calls)
	}
}

// An execution records its Slices: Free of the output waits for it.
func TestExecRecordsItsSlices(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	p := f.plan(t, cufft.CUFFT_C2C, cufft.Shape{N: []int{4}})
	gate := testenv.NewGate(t)
	in := upload(t, f.s, make([]complex64, 4))
	home, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, home.Close()) })
	out, err := cuda.Alloc[complex64](home, 4)
	testenv.Must(t, err)
	testenv.Must(t, f.ctx.Sync(testenv.Context(t)))
	base := testenv.SimStat(t, "live_allocations")
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, p.C2C(in, out, cufft.Forward))
	testenv.Must(t, out.Free())
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := testenv.SimStat(t, "live_allocations"); n != base {
			t.Fatalf("freed while the execution's stream is held (%d live, want %d)", n, base)
		}
	}
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base-1 })
}
