//go:build !gpu

package cuda_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A Close whose driver calls fail leaves the stream open and usable, and
// a Free of memory used on it still waits for its queued work: never a
// false "done".
func TestFailedCloseLeavesTheStreamOpen(t *testing.T) {
	for _, call := range []string{"cuEventCreate", "cuEventRecord", "cuStreamDestroy"} {
		t.Run(call, func(t *testing.T) {
			testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			gate := testenv.NewGate(t)
			s := newStream(t, f.ctx, cuda.NonBlocking())
			add := f.fn(t, "add_one_i32")
			testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
			illegal := testenv.SimStat(t, "illegal_addresses")
			base := testenv.SimStat(t, "live_allocations")
			streams := testenv.SimStat(t, "live_streams")
			x, err := cuda.Alloc[int32](s, 1024)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(s, x, 1))
			gate.Hold(t, s.Raw())
			testenv.Must(t, s.Launch(add, cuda.Grid(4, 1, 1), cuda.Block(256, 1, 1), x.Arg(), cuda.Uint64(1024)))

			testenv.SimFailNext(t, call, 1, libcuda.CUDA_ERROR_UNKNOWN)
			err = s.Close()
			if !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) || !strings.Contains(err.Error(), call) {
				t.Fatalf("Close with %s failing: %v, want the call's error", call, err)
			}
			if n := testenv.SimStat(t, "live_streams"); n != streams {
				t.Errorf("%d live streams after the failed Close, want %d (the stream open)", n, streams)
			}
			testenv.MustBounded(t, "x.Free", x.Free)
			liveAllocationsStay(t, base+1, "the stream's kernel is held")
			// Still usable: more work queues behind the gate.
			ran := make(chan struct{})
			testenv.Must(t, s.HostFunc(func() { close(ran) }))
			gate.Open()
			testenv.Recv(t, ran, "the host function submitted after the failed Close")
			testenv.Eventually(t, "the free after the kernels", func() bool { return testenv.SimStat(t, "live_allocations") == base })
			if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
				t.Errorf("%d illegal addresses", n-illegal)
			}
			testenv.MustBounded(t, "s.Close", s.Close)
			if n := testenv.SimStat(t, "live_streams"); n != streams-1 {
				t.Errorf("%d live streams after Close, want %d", n, streams-1)
			}
		})
	}
}

// A stream that joined another stream's capture through an event (fork
// and join) is being captured, as the driver says: Alloc and Close on it
// are refused, and a Free of memory used only on it is not put into the
// graph but waits for the capture to end.
func TestStreamJoinedToACaptureIsCapturing(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	joined := newStream(t, f.ctx, cuda.NonBlocking())
	add := f.fn(t, "add_one_i32")
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
	base := testenv.SimStat(t, "live_allocations")
	x, err := cuda.Alloc[int32](joined, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(joined, x, 1))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		fork, err := s.Record()
		if err != nil {
			return err
		}
		defer testenv.MustBounded(t, "fork.Close", fork.Close)
		if err := joined.Wait(fork); err != nil {
			return err
		}
		if err := joined.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), x.Arg(), cuda.Uint64(4)); err != nil {
			return err
		}
		pool, err := f.ctx.MemPool()
		if err != nil {
			return err
		}
		if _, err := cuda.AllocFrom[int32](pool, joined, 4); !errors.Is(err, cuda.ErrCapturing) {
			t.Errorf("AllocFrom on the joined stream: %v, want ErrCapturing", err)
		}
		if err := testenv.BoundedErr(t, "joined.Close", joined.Close); !errors.Is(err, cuda.ErrCapturing) {
			t.Errorf("Close of the joined stream: %v, want ErrCapturing", err)
		}
		if err := testenv.BoundedErr(t, "x.Free", x.Free); err != nil {
			return err
		}
		if n := testenv.SimStat(t, "live_allocations"); n != base+1 {
			t.Errorf("%d live allocations during the capture, want %d", n, base+1)
		}
		join, err := joined.Record()
		if err != nil {
			return err
		}
		defer testenv.MustBounded(t, "join.Close", join.Close)
		return s.Wait(join)
	})
	testenv.Must(t, err)
	if n, err := g.Nodes(); err != nil || n != 1 {
		t.Errorf("the graph has %d nodes (%v), want 1: the kernel, and no free", n, err)
	}
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	testenv.Must(t, graph.Drain(testenv.Context(t)))
	testenv.Eventually(t, "the free after the capture", func() bool { return testenv.SimStat(t, "live_allocations") == base })
	testenv.MustBounded(t, "joined.Close", joined.Close)
}

// A Close refused because the stream is being captured leaves the stream
// to the garbage collector: dropped later, it is destroyed.
func TestStreamDroppedAfterARefusedCloseIsDestroyed(t *testing.T) {
	for _, joinedCase := range []bool{false, true} {
		name := "its own capture"
		if joinedCase {
			name = "a capture it joined"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
			base := testenv.SimStat(t, "live_streams")
			func() {
				s, err := f.ctx.NewStream(cuda.NonBlocking())
				testenv.Must(t, err)
				origin := s
				if joinedCase {
					origin = f.s
				}
				g, err := origin.Capture(func(o *cuda.Stream) error {
					if joinedCase {
						fork, err := o.Record()
						if err != nil {
							return err
						}
						defer testenv.MustBounded(t, "fork.Close", fork.Close)
						if err := s.Wait(fork); err != nil {
							return err
						}
					}
					if err := s.HostFunc(func() {}); err != nil {
						return err
					}
					if err := testenv.BoundedErr(t, "s.Close", s.Close); !errors.Is(err, cuda.ErrCapturing) {
						t.Errorf("Close during the capture: %v, want ErrCapturing", err)
					}
					if !joinedCase {
						return nil
					}
					join, err := s.Record()
					if err != nil {
						return err
					}
					defer testenv.MustBounded(t, "join.Close", join.Close)
					return o.Wait(join)
				})
				testenv.Must(t, err)
				testenv.MustBounded(t, "g.Destroy", g.Destroy)
				if n := testenv.SimStat(t, "live_streams"); n != base+1 {
					t.Fatalf("%d live streams after the capture, want %d", n, base+1)
				}
			}()
			testenv.Must(t, graph.Drain(testenv.Context(t)))
			testenv.Eventually(t, "the dropped stream's cleanup", func() bool {
				runtime.GC()
				return testenv.SimStat(t, "live_streams") <= base
			})
		})
	}
}

// Copies and memsets on a stream record it on the Slices they use, as
// launches do: a Free waits for them on that stream, whichever stream
// allocated the memory.
func TestFreeWaitsForCopiesAndMemsets(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func(t *testing.T, s *cuda.Stream, x, other cuda.Slice[int32]) error
	}{
		{"Copy into it", func(t *testing.T, s *cuda.Stream, x, other cuda.Slice[int32]) error { return cuda.Copy(s, x, other) }},
		{"Copy from it", func(t *testing.T, s *cuda.Stream, x, other cuda.Slice[int32]) error { return cuda.Copy(s, other, x) }},
		{"Copy within it", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error {
			lo, _ := x.Slice(0, 512)
			hi, _ := x.Slice(512, 1024)
			return cuda.Copy(s, lo, hi)
		}},
		{"Memset", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error { return cuda.Memset(s, x, 7) }},
		{"Zero", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error { return cuda.Zero(s, x) }},
		{"CopyToDevice pageable", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error {
			return cuda.CopyToDevice(s, x, make([]int32, 1024))
		}},
		{"CopyToDevice pinned", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error {
			return cuda.CopyToDevice(s, x, pinned(t, 1024))
		}},
		{"CopyToHost pinned", func(t *testing.T, s *cuda.Stream, x, _ cuda.Slice[int32]) error {
			return cuda.CopyToHost(s, pinned(t, 1024), x)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			gate := testenv.NewGate(t)
			home := newStream(t, f.ctx, cuda.NonBlocking())
			user := newStream(t, f.ctx, cuda.NonBlocking())
			other := alloc(t, home, make([]int32, 1024))
			testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
			illegal := testenv.SimStat(t, "illegal_addresses")
			base := testenv.SimStat(t, "live_allocations")
			x, err := cuda.Alloc[int32](home, 1024)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(home, x, 1))
			sync(t, home)
			gate.Hold(t, user.Raw())
			testenv.Must(t, c.op(t, user, x, other))
			testenv.MustBounded(t, "x.Free", x.Free)
			liveAllocationsStay(t, base+1, "the stream that used the Slice is held")
			gate.Open()
			testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base })
			if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
				t.Errorf("%d illegal addresses", n-illegal)
			}
		})
	}
}

// pinned is pinned host memory of n int32s, freed when the test ends.
func pinned(t *testing.T, n int) *cuda.Pinned[int32] {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "ctx.Close", ctx.Close)
	p, err := cuda.AllocPinned[int32](ctx, n)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "p.Free", p.Free) })
	return p
}

// A Free of pinned memory that races a copy or launch being submitted
// with it waits for that work: the submission holds the buffer until its
// use is recorded. The submission is held inside the driver's enqueue by
// a device-wide fence (cuMemFree while another stream is busy), the Free
// runs meanwhile, and the work then queues behind a second gate.
func TestFreeRacingASubmissionWaitsForIt(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func(add *cuda.Func, s *cuda.Stream, x cuda.Slice[int32], p *cuda.Pinned[int32]) error
	}{
		{"CopyToDevice", func(_ *cuda.Func, s *cuda.Stream, x cuda.Slice[int32], p *cuda.Pinned[int32]) error {
			return cuda.CopyToDevice(s, x, p)
		}},
		{"CopyToHost of its Buffer", func(_ *cuda.Func, s *cuda.Stream, x cuda.Slice[int32], p *cuda.Pinned[int32]) error {
			return cuda.CopyToHost(s, p.Buffer(), x)
		}},
		{"Launch", func(add *cuda.Func, s *cuda.Stream, _ cuda.Slice[int32], p *cuda.Pinned[int32]) error {
			return s.Launch(add, cuda.Grid(4, 1, 1), cuda.Block(256, 1, 1), p.Arg(), cuda.Uint64(1024))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cu := testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			fence, hold := testenv.NewGate(t), testenv.NewGate(t)
			busy := newStream(t, f.ctx, cuda.NonBlocking())
			s := newStream(t, f.ctx, cuda.NonBlocking())
			x := alloc(t, s, make([]int32, 1024))
			p, err := cuda.AllocPinned[int32](f.ctx, 1024)
			testenv.Must(t, err)
			// An earlier use, done: the release must not stop at it.
			testenv.Must(t, cuda.CopyToHost(f.s, p, x))
			sync(t, f.s)
			testenv.MustBounded(t, "hostmem.Wait", func() error { return hostmem.Wait(testenv.Context(t)) })
			illegal := testenv.SimStat(t, "illegal_addresses")

			freed := beginFence(t, cu, fence, busy)
			hold.Hold(t, s.Raw()) // after the fence began: the fence does not wait for it
			fenced := testenv.SimStat(t, "fenced_calls")
			add := f.fn(t, "add_one_i32")
			submitted := testenv.WaitAsync(func() error { return c.op(add, s, x, p) })
			testenv.WaitStat(t, "the submission to wait at the fence", "fenced_calls", fenced)
			testenv.MustBounded(t, "p.Free", p.Free)
			fence.Open()
			testenv.Finished(t, "the fence", freed)
			testenv.Finished(t, "the submission", submitted)

			released := testenv.WaitAsync(func() error { return hostmem.Wait(testenv.Context(t)) })
			testenv.StillWaiting(t, "the release of the pinned memory", released)
			hold.Open()
			testenv.Finished(t, "the release", released)
			if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
				t.Errorf("%d illegal addresses", n-illegal)
			}
		})
	}
}
