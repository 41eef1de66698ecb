//go:build !gpu

package cuda_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Zero sets memory in the widest elements that the Slice's address and
// byte length allow: cuMemsetD32Async for words, as C programs zero them,
// cuMemsetD16Async for half words, cuMemsetD8Async otherwise; each way
// zeroes exactly the Slice's bytes.
func TestZeroUsesTheWidestMemsetTheSliceAllows(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	testenv.OnThread(t, f.ctx.Raw())
	for _, tc := range []struct {
		i, j int
		call string
	}{
		{0, 16, "cuMemsetD32Async"},
		{4, 12, "cuMemsetD32Async"},
		{2, 6, "cuMemsetD16Async"},
		{0, 6, "cuMemsetD16Async"},
		{1, 5, "cuMemsetD8Async"},
		{4, 7, "cuMemsetD8Async"},
	} {
		ones := slices.Repeat([]uint8{0xff}, 16)
		d := alloc(t, f.s, ones)
		part, err := d.Slice(tc.i, tc.j)
		testenv.Must(t, err)
		testenv.Must(t, cuda.Zero(f.s, part)) // the first call of each memset resolves it
		calls := testenv.CountThreadCalls(t, func() { testenv.Must(t, cuda.Zero(f.s, part)) })
		if got, want := testenv.CallsPer(calls, 1), testenv.CallsPer(map[string]int64{tc.call: 1, "cuCtxGetCurrent": 1}, 1); got != want {
			t.Errorf("Zero of bytes [%d:%d]: driver calls\n%s\nwant\n%s", tc.i, tc.j, got, want)
		}
		got := make([]uint8, 16)
		testenv.Must(t, cuda.CopyToHost(f.s, got, d))
		want := slices.Clone(ones)
		clear(want[tc.i:tc.j])
		if !slices.Equal(got, want) {
			t.Errorf("Zero of bytes [%d:%d] left % x", tc.i, tc.j, got)
		}
	}
}

// Inside RunCached's function, the calls on the function's own goroutine
// ask for no context (the run's thread has it current), but those of
// another goroutine in the same context go the ordinary way: on a thread
// with no context they make it current, and they work.
func TestRunCachedSkipsTheContextQueryOnlyOnItsOwnGoroutine(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	other := newStream(t, f.ctx)
	d := alloc(t, f.s, make([]int32, 16))
	o := alloc(t, other, slices.Repeat([]int32{-1}, 16))
	testenv.Must(t, cuda.Zero(f.s, d)) // the first call of the memset resolves it
	c := cuda.NewCached(cuda.DefaultCaptureMode)
	defer func() { testenv.MustBounded(t, "c.Close", c.Close) }()
	var own, theirs map[string]int64
	var theirCurrent libcuda.Context
	testenv.Must(t, f.s.RunCached(c, func(s *cuda.Stream) error {
		own = testenv.CountThreadCalls(t, func() { testenv.Must(t, cuda.Zero(s, d)) })
		done := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := libcuda.CtxSetCurrent(0); err != nil {
				done <- err
				return
			}
			var err error
			theirs = testenv.CountThreadCalls(t, func() { err = cuda.Zero(other, o) })
			done <- errors.Join(err, libcuda.CtxGetCurrent(&theirCurrent), libcuda.CtxSetCurrent(0))
		}()
		return testenv.Recv(t, done, "the other goroutine's Zero")
	}))
	sync(t, f.s)
	sync(t, other)
	if got, want := testenv.CallsPer(own, 1), testenv.CallsPer(map[string]int64{"cuMemsetD32Async": 1}, 1); got != want {
		t.Errorf("Zero on RunCached's goroutine: driver calls\n%s\nwant\n%s", got, want)
	}
	if got, want := testenv.CallsPer(theirs, 1), testenv.CallsPer(map[string]int64{"cuMemsetD32Async": 1, "cuCtxGetCurrent": 1, "cuCtxSetCurrent": 1}, 1); got != want {
		t.Errorf("Zero on another goroutine during the run: driver calls\n%s\nwant\n%s", got, want)
	}
	if theirCurrent != f.ctx.Raw() {
		t.Errorf("the other goroutine's thread has context %#x after its Zero, want the stream's %#x", theirCurrent, f.ctx.Raw())
	}
	got := make([]int32, 16)
	testenv.Must(t, cuda.CopyToHost(other, got, o))
	if !slices.Equal(got, make([]int32, 16)) {
		t.Errorf("the other goroutine's Zero left %v", got)
	}
}

// A RunCached whose function panics, or calls runtime.Goexit, leaves no
// mark behind: a later Zero on the same goroutine, its thread's context
// taken away meanwhile, makes the context current again and works.
func TestRunCachedEndsItsMarkWhenTheFunctionPanicsOrExits(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	d := alloc(t, f.s, make([]int32, 16))
	testenv.Must(t, cuda.Zero(f.s, d)) // the first call of the memset resolves it
	for _, way := range []string{"panic", "Goexit"} {
		c := cuda.NewCached(cuda.DefaultCaptureMode)
		done := make(chan map[string]int64, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			func() {
				defer func() {
					if recover() == nil && way == "panic" {
						t.Errorf("RunCached did not pass the function's panic on")
					}
				}()
				defer func() {
					if way == "Goexit" {
						// Goexit's unwinding passes here: go on as a
						// caller that survived it would.
						done <- zeroCalls(t, f.s, d)
					}
				}()
				_ = f.s.RunCached(c, func(*cuda.Stream) error {
					if way == "panic" {
						panic("the function's own panic")
					}
					runtime.Goexit()
					return nil
				})
			}()
			done <- zeroCalls(t, f.s, d)
		}()
		calls := testenv.Recv(t, done, "the goroutine after RunCached's "+way)
		if got, want := testenv.CallsPer(calls, 1), testenv.CallsPer(map[string]int64{"cuMemsetD32Async": 1, "cuCtxGetCurrent": 1, "cuCtxSetCurrent": 1}, 1); got != want {
			t.Errorf("after a %s in RunCached's function, Zero's driver calls on a thread with no context:\n%s\nwant\n%s", way, got, want)
		}
		sync(t, f.s)
		testenv.MustBounded(t, "c.Close", c.Close)
	}
}

// zeroCalls takes the context from the calling (locked) thread and counts
// the driver calls of a Zero of d on s.
func zeroCalls(t *testing.T, s *cuda.Stream, d cuda.Slice[int32]) map[string]int64 {
	if err := libcuda.CtxSetCurrent(0); err != nil {
		t.Error(err)
	}
	calls := testenv.CountThreadCalls(t, func() {
		if err := cuda.Zero(s, d); err != nil {
			t.Error(err)
		}
	})
	if err := libcuda.CtxSetCurrent(0); err != nil {
		t.Error(err)
	}
	return calls
}

// A RunCached's function that runs code under another context (another
// device's Context.Do, or its RunCached) and calls into the run's context
// from there gets the run's context made current for that call and the
// other one restored, as outside a run: the mark holds only while no call
// of package cuda or of libcuda.WithContext has switched contexts since
// it was made.
func TestRunCachedCallsUnderAnotherContextMakeTheirOwnCurrent(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) < 2 {
		t.Fatalf("the simulator shows %d devices, want 2", len(devs))
	}
	other, err := devs[1].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "other.Close", other.Close) })
	otherS := newStream(t, other)
	d := alloc(t, f.s, make([]int32, 16))
	od := alloc(t, otherS, make([]int32, 1))
	testenv.Must(t, cuda.Zero(f.s, d)) // the first call of the memset resolves it
	for _, way := range []string{"Context.Do", "RunCached"} {
		c := cuda.NewCached(cuda.DefaultCaptureMode)
		oc := cuda.NewCached(cuda.DefaultCaptureMode)
		var under, after map[string]int64
		var current libcuda.Context
		// Under the other context: a Zero in the run's, and what the
		// thread has after it.
		body := func(s *cuda.Stream) error {
			under = testenv.CountThreadCalls(t, func() { testenv.Must(t, cuda.Zero(s, d)) })
			return libcuda.CtxGetCurrent(&current)
		}
		testenv.Must(t, f.s.RunCached(c, func(s *cuda.Stream) error {
			var err error
			if way == "Context.Do" {
				err = other.Do(func() error { return body(s) })
			} else {
				// The other run captures a Zero of its own; body's goes
				// to s, which that run does not capture.
				err = otherS.RunCached(oc, func(os *cuda.Stream) error {
					if err := cuda.Zero(os, od); err != nil {
						return err
					}
					return body(s)
				})
			}
			after = testenv.CountThreadCalls(t, func() { testenv.Must(t, cuda.Zero(s, d)) })
			return err
		}))
		sync(t, f.s)
		sync(t, otherS)
		if got, want := testenv.CallsPer(under, 1), testenv.CallsPer(map[string]int64{"cuMemsetD32Async": 1, "cuCtxGetCurrent": 1, "cuCtxSetCurrent": 2}, 1); got != want {
			t.Errorf("%s: Zero in the run's context under the other's: driver calls\n%s\nwant\n%s", way, got, want)
		}
		if current != other.Raw() {
			t.Errorf("%s: after the Zero, the thread has context %#x, want the other's %#x, restored", way, current, other.Raw())
		}
		// After the switches, the run's later calls ask again (and find
		// their context current): the mark no longer holds.
		if got, want := testenv.CallsPer(after, 1), testenv.CallsPer(map[string]int64{"cuMemsetD32Async": 1, "cuCtxGetCurrent": 1}, 1); got != want {
			t.Errorf("%s: Zero in the run after the other's: driver calls\n%s\nwant\n%s", way, got, want)
		}
		testenv.MustBounded(t, "c.Close", c.Close)
		testenv.MustBounded(t, "oc.Close", oc.Close)
	}
}
