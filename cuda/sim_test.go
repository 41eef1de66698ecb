//go:build !gpu

package cuda_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Free is ordered after the work of every stream that used the Slice: a
// launch on a held stream keeps the memory allocated until the stream goes
// on, whether that stream is still open, closed, or all users are closed.
func TestFreeWaitsForEveryStreamThatUsedIt(t *testing.T) {
	for _, c := range []struct {
		name                 string
		closeUser, closeHome bool
	}{
		{"open", false, false},
		{"user closed", true, false},
		{"all closed", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.OnPrimary(t, 0)
			testenv.NoErrorsLogged(t)
			f := newFixture(t)
			gate := testenv.NewGate(t)
			home := newStream(t, f.ctx, cuda.NonBlocking())
			user := newStream(t, f.ctx, cuda.NonBlocking())
			// Earlier tests' frees are done: the counts move only for this one.
			testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
			illegal := testenv.SimStat(t, "illegal_addresses")
			base := testenv.SimStat(t, "live_allocations")
			x, err := cuda.Alloc[int32](home, 1024)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(home, x, 1))
			sync(t, home)
			gate.Hold(t, user.Raw())
			testenv.Must(t, user.Launch(f.fn(t, "add_one_i32"), cuda.Grid(4, 1, 1), cuda.Block(256, 1, 1), x.Arg(), cuda.Uint64(1024)))
			if c.closeUser {
				testenv.MustBounded(t, "user.Close", user.Close)
			}
			if c.closeHome {
				testenv.MustBounded(t, "home.Close", home.Close)
			}
			testenv.MustBounded(t, "x.Free", x.Free)
			if n := testenv.SimStat(t, "live_allocations"); n != base+1 {
				t.Fatalf("%d live allocations while the user is held, want %d", n, base+1)
			}
			gate.Open()
			testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base })
			if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
				t.Errorf("%d illegal addresses", n-illegal)
			}
		})
	}
}

// Values dropped without Close or Free are released by the garbage
// collector, with one warning for each kind.
func TestDroppedValuesAreReleased(t *testing.T) {
	f := newFixture(t)
	var mu gosync.Mutex
	var warnings []string
	old := slog.Default()
	slog.SetDefault(slog.New(handlerFunc(func(r slog.Record) {
		mu.Lock()
		warnings = append(warnings, r.Message)
		mu.Unlock()
	})))
	t.Cleanup(func() { slog.SetDefault(old) })

	cuda.ResetDroppedLogs()
	stats := []string{"live_streams", "live_allocations", "live_events", "live_modules"}
	// Earlier tests' dropped values are released by the collector in the
	// background: let that settle first (the counts the same after two
	// collections in a row), so that the counts below move by this test's
	// values only.
	base := map[string]int64{}
	for range 50 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		same := true
		for _, s := range stats {
			n := testenv.SimStat(t, s)
			same = same && n == base[s]
			base[s] = n
		}
		if same {
			break
		}
	}
	func() {
		// kept reachable until they are counted: a collection between two
		// makings (the race detector's runs have them) would release the
		// first ones before the count
		var kept []any
		for range 2 {
			s, err := f.ctx.NewStream()
			testenv.Must(t, err)
			x, err := cuda.Alloc[float32](s, 16)
			testenv.Must(t, err)
			testenv.Must(t, cuda.Memset(s, x, 1))
			ev, err := s.Record()
			testenv.Must(t, err)
			m, err := cuda.LoadModule(f.ctx, kernelsPTX())
			testenv.Must(t, err)
			kept = append(kept, s, x, ev, m)
		}
		for _, s := range stats {
			if n := testenv.SimStat(t, s); n < base[s]+2 {
				t.Fatalf("%s: %d after making two, from %d", s, n, base[s])
			}
		}
		runtime.KeepAlive(kept)
	}()
	testenv.Eventually(t, "the dropped values to be released", func() bool {
		runtime.GC()
		for _, s := range stats {
			// Nothing else creates these meanwhile, but earlier tests'
			// values may go too (a closed stream's final event).
			if testenv.SimStat(t, s) > base[s] {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for _, kind := range []string{"Stream", "Slice", "Event", "Module"} {
		n := 0
		for _, w := range warnings {
			if strings.Contains(w, "a "+kind+" was dropped") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d warnings for dropped %ss, want 1: %q", n, kind, warnings)
		}
	}
}

type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }

// Driver failures are errors that name the call and match the Result,
// and leave the values usable.
func TestDriverFailuresNameTheCall(t *testing.T) {
	f := newFixture(t)
	// Twice: the first out of memory is retried after a trim.
	testenv.SimFailNext(t, "cuMemAllocAsync", 2, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
	_, err := cuda.Alloc[float32](f.s, 4)
	if !errors.Is(err, libcuda.CUDA_ERROR_OUT_OF_MEMORY) || !strings.Contains(err.Error(), "cuMemAllocAsync") {
		t.Errorf("Alloc: %v", err)
	}
	x := alloc(t, f.s, []float32{1, 2})
	saxpy := f.fn(t, "saxpy")
	testenv.SimFailNext(t, "cuLaunchKernel", 1, libcuda.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
	err = f.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(2, 1, 1), cuda.Int32(2), cuda.Float32(1), x.Arg(), x.Arg())
	if !errors.Is(err, libcuda.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) || !strings.Contains(err.Error(), "cuLaunchKernel") {
		t.Errorf("Launch: %v", err)
	}
	testenv.Must(t, f.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(2, 1, 1), cuda.Int32(2), cuda.Float32(1), x.Arg(), x.Arg()))
	testenv.SimFailNext(t, "cuMemcpyDtoHAsync", 1, libcuda.CUDA_ERROR_INVALID_VALUE)
	if err := cuda.CopyToHost(f.s, make([]float32, 2), x); !strings.Contains(err.Error(), "cuMemcpyDtoHAsync") {
		t.Errorf("CopyToHost: %v", err)
	}
	if got := read(t, f.s, x); got[0] != 2 || got[1] != 4 {
		t.Errorf("after the failures x = %v, want [2 4]", got)
	}
	testenv.SimFailNext(t, "cuModuleLoadDataEx", 1, libcuda.CUDA_ERROR_INVALID_PTX)
	if _, err := cuda.LoadModule(f.ctx, kernelsPTX()); !errors.Is(err, libcuda.CUDA_ERROR_INVALID_PTX) {
		t.Errorf("LoadModule: %v", err)
	}
	testenv.SimFailNext(t, "cuFuncGetParamInfo", 1, libcuda.CUDA_ERROR_UNKNOWN)
	if _, err := f.mod.Func("saxpy"); !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Errorf("Func: %v", err)
	}
}

// Launches, copies and Frees from many goroutines at once: every call
// succeeds or fails with ErrFreed or ErrClosed, and the device never
// touches freed memory.
func TestConcurrentUseFreeAndClose(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	saxpy := f.fn(t, "saxpy")
	illegal := testenv.SimStat(t, "illegal_addresses")
	for range 20 {
		s := newStream(t, f.ctx)
		x, err := cuda.Alloc[float32](f.s, 256)
		testenv.Must(t, err)
		y, err := cuda.Alloc[float32](f.s, 256)
		testenv.Must(t, err)
		var wg gosync.WaitGroup
		errs := make(chan error, 1000)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					var err error
					switch (g + i) % 5 {
					case 0: // the two allocations in either order
						a, b := x, y
						if g%2 == 1 {
							a, b = y, x
						}
						err = s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), cuda.Int32(256), cuda.Float32(1), a.Arg(), b.Arg())
					case 1:
						err = cuda.Copy(f.s, y, x)
					case 2:
						err = cuda.CopyToDevice(s, x, make([]float32, 256))
					case 3: // one allocation twice: held once
						err = s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), cuda.Int32(256), cuda.Float32(1), x.Arg(), x.Arg())
					case 4:
						lo, _ := x.Slice(0, 128)
						hi, _ := x.Slice(128, 256)
						err = cuda.Copy(f.s, lo, hi)
					}
					if err != nil && !errors.Is(err, cuda.ErrFreed) && !errors.Is(err, cuda.ErrClosed) {
						errs <- err
					}
				}
			}()
		}
		for _, op := range []func() error{x.Free, y.Free, s.Close} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := op(); err != nil {
					errs <- err
				}
			}()
		}
		testenv.Recv(t, testenv.Go(wg.Wait), "the goroutines")
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		sync(t, f.s)
	}
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
	if n := testenv.SimStat(t, "illegal_addresses"); n != illegal {
		t.Errorf("%d illegal addresses", n-illegal)
	}
}

// A Slice freed inside a capture of a stream that used it is freed once
// the capture has ended, and the captured graph still runs on it until
// then.
func TestFreeDuringCaptureWaitsForTheCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	f := newFixture(t)
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(testenv.Context(t)) })
	base := testenv.SimStat(t, "live_allocations")
	x, err := cuda.Alloc[int32](f.s, 4)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(f.s, x, 1))
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		if err := s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(1, 1, 1), cuda.Block(4, 1, 1), x.Arg(), cuda.Uint64(4)); err != nil {
			return err
		}
		if err := testenv.BoundedErr(t, "x.Free", x.Free); err != nil {
			return err
		}
		if n := testenv.SimStat(t, "live_allocations"); n != base+1 {
			t.Errorf("%d live allocations during the capture, want %d", n, base+1)
		}
		return nil
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
	if err := testenv.BoundedErr(t, "x.Free", x.Free); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	testenv.Must(t, graph.Drain(testenv.Context(t)))
	testenv.Eventually(t, "the free after the capture", func() bool { return testenv.SimStat(t, "live_allocations") == base })
}
