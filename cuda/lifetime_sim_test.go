//go:build !gpu

package cuda_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
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
			testenv.Must(t, f.ctx.Sync(t.Context()))
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
			testenv.Must(t, x.Free())
			// A free not ordered after the kernel would run at once on
			// another stream: give it a moment to show.
			for deadline := time.Now().Add(30 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if n := testenv.SimStat(t, "live_allocations"); n != base+1 {
					t.Fatalf("%d live allocations while the stream's kernel is held, want %d", n, base+1)
				}
			}
			// Still usable: more work queues behind the gate.
			ran := make(chan struct{})
			testenv.Must(t, s.HostFunc(func() { close(ran) }))
			gate.Open()
			testenv.Recv(t, ran, "the host function submitted after the failed Close")
			testenv.Eventually(t, "the free after the kernels", func() bool { return testenv.SimStat(t, "live_allocations") == base })
			if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
				t.Errorf("%d illegal addresses", n-illegal)
			}
			testenv.Must(t, s.Close())
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
	testenv.Must(t, f.ctx.Sync(t.Context()))
	base := testenv.SimStat(t, "live_allocations")
	x, err := cuda.Alloc[int32](joined, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(joined, x, 1))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		fork, err := s.Record()
		if err != nil {
			return err
		}
		defer fork.Close()
		if err := joined.Wait(fork); err != nil {
			return err
		}
		if err := joined.Launch(add, cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), x.Arg(), cuda.Uint64(4)); err != nil {
			return err
		}
		if _, err := cuda.Alloc[int32](joined, 4); !errors.Is(err, cuda.ErrCapturing) {
			t.Errorf("Alloc on the joined stream: %v, want ErrCapturing", err)
		}
		if err := joined.Close(); !errors.Is(err, cuda.ErrCapturing) {
			t.Errorf("Close of the joined stream: %v, want ErrCapturing", err)
		}
		if err := x.Free(); err != nil {
			return err
		}
		if n := testenv.SimStat(t, "live_allocations"); n != base+1 {
			t.Errorf("%d live allocations during the capture, want %d", n, base+1)
		}
		join, err := joined.Record()
		if err != nil {
			return err
		}
		defer join.Close()
		return s.Wait(join)
	})
	testenv.Must(t, err)
	if n, err := g.Nodes(); err != nil || n != 1 {
		t.Errorf("the graph has %d nodes (%v), want 1: the kernel, and no free", n, err)
	}
	testenv.Must(t, g.Destroy())
	testenv.Must(t, graph.Drain(t.Context()))
	testenv.Eventually(t, "the free after the capture", func() bool { return testenv.SimStat(t, "live_allocations") == base })
	testenv.Must(t, joined.Close())
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
			testenv.Must(t, f.ctx.Sync(t.Context()))
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
						defer fork.Close()
						if err := s.Wait(fork); err != nil {
							return err
						}
					}
					if err := s.HostFunc(func() {}); err != nil {
						return err
					}
					if err := s.Close(); !errors.Is(err, cuda.ErrCapturing) {
						t.Errorf("Close during the capture: %v, want ErrCapturing", err)
					}
					if !joinedCase {
						return nil
					}
					join, err := s.Record()
					if err != nil {
						return err
					}
					defer join.Close()
					return o.Wait(join)
				})
				testenv.Must(t, err)
				testenv.Must(t, g.Destroy())
				if n := testenv.SimStat(t, "live_streams"); n != base+1 {
					t.Fatalf("%d live streams after the capture, want %d", n, base+1)
				}
			}()
			testenv.Must(t, graph.Drain(t.Context()))
			testenv.Eventually(t, "the dropped stream's cleanup", func() bool {
				runtime.GC()
				return testenv.SimStat(t, "live_streams") <= base
			})
		})
	}
}
