//go:build !gpu

package cuda_test

import (
	"errors"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A stream that becomes a Slice's only user (a launch that writes all of
// it, after another stream's use) is among the streams Free waits for,
// even when that launch failed in the driver: its later launches record
// nothing (the Slice is theirs alone), and Free must still wait for them.
func TestFreeWaitsForTheSoloStreamWhoseFirstLaunchFailed(t *testing.T) {
	testenv.OnPrimary(t, 0)
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	add := f.fn(t, "add_one_i32")
	g, b := cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1)
	s2 := newStream(t, f.ctx, cuda.NonBlocking())
	warm := alloc(t, s2, make([]int32, 256))
	testenv.Must(t, s2.Launch(add, g, b, warm.Arg(), cuda.Uint64(256))) // the shape is checked: the launches below are Launch's own
	x, err := cuda.Alloc[int32](f.s, 256)                               // f.s's alone
	testenv.Must(t, err)
	// Frees of earlier tests, in stream order, are done: the count of
	// live allocations below changes by this test's alone.
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })

	testenv.SimFailNext(t, "cuLaunchKernel", 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	if err := s2.Launch(add, g, b, x.Arg(), cuda.Uint64(256)); !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Fatalf("the failing launch: %v", err)
	}
	gate := testenv.NewGate(t)
	gate.Hold(t, s2.Raw())
	testenv.Must(t, s2.Launch(add, g, b, x.Arg(), cuda.Uint64(256))) // x is s2's alone now: nothing recorded
	live := testenv.SimStat(t, "live_allocations")
	testenv.MustBounded(t, "x.Free", x.Free)
	liveAllocationsStay(t, live, "s2's launch is held")
	illegal := testenv.SimStat(t, "illegal_addresses")
	gate.Open()
	sync(t, s2)
	testenv.Eventually(t, "the free after s2's launch", func() bool { return testenv.SimStat(t, "live_allocations") == live-1 })
	if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
		t.Errorf("%d illegal addresses", n-illegal)
	}
}

// Free, Module.Close and Stream.Close wait for a launch that Launch makes
// itself while it is inside the driver (held there by a fence, as a
// cuMemFree makes the driver hold other threads' submissions), then make
// later launches fail as they should.
func TestCloseAndFreeWaitForALaunchInTheDriver(t *testing.T) {
	for _, what := range []string{"Slice.Free", "Module.Close", "Stream.Close"} {
		t.Run(what, func(t *testing.T) {
			cu := testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			busy := newStream(t, f.ctx, cuda.NonBlocking())
			// Another goroutine's call held by the fence (a release in the
			// background) can be taken for the launch, which then may not
			// have begun when the Free or Close comes: such a try says
			// nothing, and is made again.
			for try := 0; ; try++ {
				if raced := closeDuringALaunch(t, cu, f, busy, what); !raced {
					return
				}
				if try == 5 {
					t.Fatal("the launch never reached the driver before the " + what)
				}
			}
		})
	}
}

// closeDuringALaunch is one try of TestCloseAndFreeWaitForALaunchInTheDriver;
// raced: the launch had not begun when the Free or Close came.
func closeDuringALaunch(t *testing.T, cu libcuda.Context, f *fixture, busy *cuda.Stream, what string) (raced bool) {
	s, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	mod, err := cuda.LoadModule(f.ctx, kernels.PTX)
	testenv.Must(t, err)
	add, err := mod.Func("add_one_i32")
	testenv.Must(t, err)
	x, err := cuda.Alloc[int32](s, 1024)
	testenv.Must(t, err)
	defer func() {
		for _, err := range []error{s.Sync(testenv.Context(t)), x.Free(), mod.Close(), s.Close()} {
			if err != nil && !errors.Is(err, cuda.ErrFreed) && !errors.Is(err, cuda.ErrClosed) {
				t.Error(err)
			}
		}
	}()
	g, b := cuda.Grid(4, 1, 1), cuda.Block(256, 1, 1)
	launch := func() error { return s.Launch(add, g, b, x.Arg(), cuda.Uint64(1024)) }
	testenv.Must(t, launch()) // checked in full: the next one is Launch's own
	sync(t, s)

	fence := testenv.NewGate(t)
	freed := beginFence(t, cu, fence, busy)
	fenced := testenv.SimStat(t, "fenced_calls")
	launched := testenv.WaitAsync(launch)
	testenv.WaitStat(t, "the launch to wait at the fence", "fenced_calls", fenced)
	var closed <-chan error
	want := cuda.ErrClosed
	switch what {
	case "Slice.Free":
		closed, want = testenv.WaitAsync(x.Free), cuda.ErrFreed
	case "Module.Close":
		closed = testenv.WaitAsync(mod.Close)
	case "Stream.Close":
		closed = testenv.WaitAsync(s.Close)
	}
	var early error
	finishedEarly := false
	select {
	case early = <-closed:
		finishedEarly = true
	case <-time.After(50 * time.Millisecond):
	}
	fence.Open()
	testenv.Finished(t, "the fence", freed)
	if err := testenv.Recv(t, launched, "the launch"); errors.Is(err, want) {
		return true // the Free or Close came first
	} else if err != nil {
		t.Fatalf("the launch: %v", err)
	}
	if finishedEarly {
		t.Fatalf("%s returned (%v) while the launch was in the driver", what, early)
	}
	testenv.Finished(t, what, closed)
	if err := launch(); !errors.Is(err, want) {
		t.Errorf("a launch after %s: %v, want %v", what, err, want)
	}
	return false
}

// Free waits for the work of every stream that used the Slice, one made
// with Unordered too (its uses are not ordered, but they are recorded):
// here launches that Launch makes itself, and a Do.
func TestFreeWaitsForAnUnorderedStreamsLaunch(t *testing.T) {
	for _, how := range []string{"launch", "Do"} {
		t.Run(how, func(t *testing.T) {
			testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			add := f.fn(t, "add_one_i32")
			g, b := cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1)
			u := newStream(t, f.ctx, cuda.NonBlocking(), cuda.Unordered())
			warm := alloc(t, u, make([]int32, 256))
			testenv.Must(t, u.Launch(add, g, b, warm.Arg(), cuda.Uint64(256))) // the next launches are Launch's own
			x, err := cuda.Alloc[int32](f.s, 256)
			testenv.Must(t, err)
			testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) }) // earlier frees are done (see above)
			gate := testenv.NewGate(t)
			gate.Hold(t, u.Raw())
			switch how {
			case "launch":
				testenv.Must(t, u.Launch(add, g, b, x.Arg(), cuda.Uint64(256)))
			case "Do":
				ops := [1]cuda.Operand{x.Operand(cuda.Write)}
				testenv.Must(t, u.Do("cuMemsetD32Async", ops[:], func(raw libcuda.Stream) error {
					return libcuda.MemsetD32Async(ops[0].Ptr(), 7, 256, raw)
				}))
			}
			live := testenv.SimStat(t, "live_allocations")
			testenv.MustBounded(t, "x.Free", x.Free)
			liveAllocationsStay(t, live, "the unordered stream's work is held")
			gate.Open()
			sync(t, u)
			testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == live-1 })
		})
	}
}
