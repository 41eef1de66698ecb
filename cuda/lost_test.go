package cuda_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// faultSetup is what the fault tests make, in a child process (a fault
// loses the device for the process): nothing is closed, since every call
// fails once the context is lost and the process ends after the test.
type faultSetup struct {
	ctx    *cuda.Context
	others []*cuda.Stream
	bad    *cuda.Stream
	fill   *cuda.Func
	x      cuda.Slice[int32]
}

func newFaultSetup(t *testing.T) *faultSetup {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	testenv.Must(t, err)
	fs := &faultSetup{ctx: ctx}
	fs.fill, err = mod.Func("fill_i32")
	testenv.Must(t, err)
	for range 3 {
		s, err := ctx.NewStream(cuda.NonBlocking())
		testenv.Must(t, err)
		fs.others = append(fs.others, s)
	}
	fs.bad, err = ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	fs.x, err = cuda.Alloc[int32](fs.bad, 1024)
	testenv.Must(t, err)
	testenv.MustBounded(t, "fs.bad.Sync", func() error { return fs.bad.Sync(testenv.Context(t)) })
	return fs
}

// goodLaunches launches fill_i32 over memory of its own on each of the
// other streams in turn, n in all, without waiting.
func (fs *faultSetup) goodLaunches(t *testing.T, n int) {
	ys := make([]cuda.Slice[int32], len(fs.others))
	for i, s := range fs.others {
		y, err := cuda.Alloc[int32](s, 256)
		testenv.Must(t, err)
		ys[i] = y
	}
	for i := range n {
		k := i % len(fs.others)
		testenv.Must(t, fs.others[k].Launch(fs.fill, cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), ys[k].Arg(), cuda.Uint64(256), cuda.Int32(int32(i))))
	}
}

// launchOutOfBounds launches fill_i32 over 2^40 ints of the 1024-int
// Slice x on the bad stream: an out-of-bounds write that faults within
// the first pages past x. It returns the launch's line and its error.
func (fs *faultSetup) launchOutOfBounds() (line int, err error) {
	_, _, line, _ = runtime.Caller(0)
	err = fs.bad.Launch(fs.fill, cuda.Grid(65535, 1, 1), cuda.Block(1024, 1, 1), fs.x.Arg(), cuda.Uint64(1<<40), cuda.Int32(-1))
	return line + 1, err
}

// checkNamed checks that the launch is the out-of-bounds one, with its
// caller's line.
func (fs *faultSetup) checkNamed(t *testing.T, l cuda.LaunchInfo, line int) {
	t.Helper()
	file, gotLine, fn := l.Caller()
	if l.Kernel != "fill_i32" || l.Stream != fs.bad.Raw() || l.Grid != cuda.Grid(65535, 1, 1) || l.Block != cuda.Block(1024, 1, 1) {
		t.Errorf("launch %v: want fill_i32, grid (65535,1,1), block (1024,1,1) on the faulting stream %#x", l, fs.bad.Raw())
	}
	if !strings.HasSuffix(file, "lost_test.go") || gotLine != line || !strings.HasSuffix(fn, "launchOutOfBounds") {
		t.Errorf("launch %v called at %s:%d (%s), want lost_test.go:%d (launchOutOfBounds)", l, file, gotLine, fn, line)
	}
}

// A kernel's out-of-bounds write, launched after 10 good launches on other
// streams, makes the faulting stream's wait fail with a *LostError that
// matches ErrContextLost and the driver's Result and names that launch
// (kernel, shape, stream, caller's line) among the candidates; every later
// call on the device returns the same error at once, without the driver.
func TestKernelFaultIsContextLostNamingTheLaunch(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	fs := newFaultSetup(t)
	fs.goodLaunches(t, 10)
	line, lerr := fs.launchOutOfBounds()
	testenv.Must(t, lerr)
	err := fs.bad.Sync(testenv.Context(t))
	t.Logf("lost-context: the faulting stream's Sync returned: %v", err)
	var l *cuda.LostError
	if !errors.Is(err, cuda.ErrContextLost) || !errors.Is(err, libcuda.ErrContextLost) || !errors.As(err, &l) {
		t.Fatalf("Sync after the fault = %v, want a *LostError matching ErrContextLost", err)
	}
	if !errors.Is(err, l.Result()) || !l.Result().ContextLost() {
		t.Errorf("Result %v: want the sticky Result that the error matches", l.Result())
	}
	found := false
	for _, c := range l.Launches {
		if c.Kernel == "fill_i32" && c.Stream == fs.bad.Raw() {
			fs.checkNamed(t, c, line)
			found = true
		}
	}
	if !found || !l.OneStream || l.Exact {
		t.Errorf("candidates %v (one stream %v, exact %v): want the out-of-bounds launch, from the faulting stream's launches", l.Launches, l.OneStream, l.Exact)
	}
	if !strings.Contains(err.Error(), "fill_i32") || !strings.Contains(err.Error(), "lost_test.go") || !strings.Contains(err.Error(), "restart") {
		t.Errorf("the error's text does not name the launch, its caller and the restart: %v", err)
	}

	// Every later call returns the same error at once.
	launches, counted := testenv.Stat(t, "kernel_launches")
	y, _ := fs.x.Slice(0, 16)
	calls := map[string]error{
		"Stream.Sync of another stream": fs.others[0].Sync(testenv.Context(t)),
		"Stream.Launch":                 fs.others[1].Launch(fs.fill, cuda.Grid(1, 1, 1), cuda.Block(16, 1, 1), y.Arg(), cuda.Uint64(16), cuda.Int32(1)),
		"Context.Sync":                  fs.ctx.Sync(testenv.Context(t)),
		"CopyToHost":                    cuda.CopyToHost(fs.others[2], make([]int32, 16), y),
	}
	_, calls["Alloc"] = cuda.Alloc[int32](fs.others[0], 16)
	_, calls["Context.NewStream"] = fs.ctx.NewStream()
	_, calls["Stream.Record"] = fs.others[0].Record()
	_, _, calls["Context.MemInfo"] = fs.ctx.MemInfo()
	_, calls["Pin"] = cuda.Pin(fs.ctx, make([]byte, 4096))
	devs, derr := cuda.Devices()
	calls["Devices"] = derr
	if len(devs) == 0 {
		t.Fatal("Devices gave no device after the fault")
	}
	_, calls["Device.Context"] = devs[0].Context()
	for name, cerr := range calls {
		var again *cuda.LostError
		if !errors.As(cerr, &again) || again != l {
			t.Errorf("%s after the fault = %v, want the first *LostError", name, cerr)
		}
	}
	if n, _ := testenv.Stat(t, "kernel_launches"); counted && n != launches {
		t.Errorf("%d launches reached the driver after the fault, want 0", n-launches)
	}
}

// In debug mode (SetDebug(DebugSync), PURECUDA_DEBUG=sync) the launch that
// faults returns the *LostError itself, with exactly that launch: kernel,
// shape, stream, caller's line and its arguments.
func TestDebugSyncNamesExactlyTheFaultingLaunch(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	fs := newFaultSetup(t)
	prev := cuda.SetDebug(cuda.DebugSync)
	defer cuda.SetDebug(prev)
	fs.goodLaunches(t, 10)
	line, err := fs.launchOutOfBounds()
	t.Logf("lost-context: the faulting launch returned, in debug mode: %v", err)
	var l *cuda.LostError
	if !errors.As(err, &l) || !errors.Is(err, cuda.ErrContextLost) {
		t.Fatalf("the out-of-bounds launch in debug mode = %v, want a *LostError", err)
	}
	if !l.Exact || len(l.Launches) != 1 {
		t.Fatalf("exact %v, launches %v: want exactly the faulting launch", l.Exact, l.Launches)
	}
	fs.checkNamed(t, l.Launches[0], line)
	if args := l.Launches[0].Args; len(args) != 3 || !strings.HasPrefix(args[0], "Slice at ") || !strings.Contains(args[0], "4096 bytes") || !strings.Contains(args[1], "0x10000000000") {
		t.Errorf("arguments %q: want the Slice (an allocation of 4096 bytes) and the count 2^40", args)
	}
	if err := fs.others[0].Sync(testenv.Context(t)); !errors.As(err, new(*cuda.LostError)) {
		t.Errorf("a later Sync = %v, want the *LostError", err)
	}
}

// In debug mode a good launch waits for its kernel (its stream is idle
// after it), and a launch into a stream being captured is not waited for:
// the capture goes on and its graph runs, waited for at its launch.
func TestDebugSyncWaitsForLaunchesButNotInCaptures(t *testing.T) {
	f := newFixture(t)
	prev := cuda.SetDebug(cuda.DebugSync)
	defer cuda.SetDebug(prev)
	x := alloc(t, f.s, make([]int32, 256))
	fill := f.fn(t, "fill_i32")
	testenv.Must(t, f.s.Launch(fill, cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), x.Arg(), cuda.Uint64(256), cuda.Int32(5)))
	if err := libcuda.StreamQuery(f.s.Raw()); err != nil {
		t.Errorf("the stream after a launch in debug mode: %v, want idle", err)
	}
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		return s.Launch(fill, cuda.Grid(1, 1, 1), cuda.Block(256, 1, 1), x.Arg(), cuda.Uint64(256), cuda.Int32(6))
	})
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "g.Destroy", g.Destroy)
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.Must(t, f.s.LaunchGraph(e))
	if err := libcuda.StreamQuery(f.s.Raw()); err != nil {
		t.Errorf("the stream after a graph launch in debug mode: %v, want idle", err)
	}
	if got := read(t, f.s, x); got[0] != 6 || got[255] != 6 {
		t.Errorf("after the graph x = %d..%d, want 6", got[0], got[255])
	}
}

// Close in a lost context returns the loss at once, as every call does,
// instead of a driver call's failure.
func TestCloseInALostContextReturnsTheLoss(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	fs := newFaultSetup(t)
	_, lerr := fs.launchOutOfBounds()
	testenv.Must(t, lerr)
	var l *cuda.LostError
	if err := fs.bad.Sync(testenv.Context(t)); !errors.As(err, &l) {
		t.Fatalf("Sync after the fault = %v, want a *LostError", err)
	}
	for i, s := range append(fs.others, fs.bad) {
		var again *cuda.LostError
		if err := testenv.BoundedErr(t, "s.Close", s.Close); !errors.As(err, &again) || again != l {
			t.Errorf("Close of stream %d after the fault = %v, want the first *LostError", i, err)
		}
	}
}

// A graph's launch is one entry of the launch history: a fault in a
// kernel of a graph names the graph's launch (and the launch captured into
// it) among the candidates; in debug mode LaunchGraph itself reports it.
func TestKernelFaultInAGraphNamesTheGraphsLaunch(t *testing.T) {
	for _, debug := range []bool{false, true} {
		name := "after"
		if debug {
			name = "debug"
		}
		t.Run(name, func(t *testing.T) {
			if !testenv.InChild(t) {
				return
			}
			fs := newFaultSetup(t)
			g, err := fs.bad.Capture(func(*cuda.Stream) error {
				_, err := fs.launchOutOfBounds()
				return err
			})
			testenv.Must(t, err)
			e, err := g.Instantiate()
			testenv.Must(t, err)
			if debug {
				defer cuda.SetDebug(cuda.SetDebug(cuda.DebugSync))
			}
			fs.goodLaunches(t, 10)
			_, _, line, _ := runtime.Caller(0)
			err = fs.bad.LaunchGraph(e)
			if !debug {
				testenv.Must(t, err)
				err = fs.bad.Sync(testenv.Context(t))
			}
			t.Logf("lost-context: a graph's fault (debug %v): %v", debug, err)
			var l *cuda.LostError
			if !errors.As(err, &l) {
				t.Fatalf("after the graph's fault: %v, want a *LostError", err)
			}
			if len(l.Launches) == 0 || l.Launches[0].Kernel != "(graph)" || l.Launches[0].Stream != fs.bad.Raw() {
				t.Fatalf("candidates %v: want the graph's launch on the faulting stream first", l.Launches)
			}
			if file, got, _ := l.Launches[0].Caller(); !strings.HasSuffix(file, "lost_test.go") || got != line+1 {
				t.Errorf("the graph's launch called at %s:%d, want lost_test.go:%d", file, got, line+1)
			}
			if !strings.Contains(err.Error(), "of a graph on stream") {
				t.Errorf("the error does not name the graph's launch: %v", err)
			}
		})
	}
}
