package tests

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// DESIGN.md's eight scenarios of the release logic, and hostmem's bad
// inputs. Each scenario also checks that nothing was logged at error level.

// churn allocates and drops garbage and runs the GC, so that freed memory
// would be reused and overwritten.
func churn() {
	for range 3 {
		junk := make([][]int64, 64)
		for i := range junk {
			junk[i] = make([]int64, 1<<14)
			for j := range junk[i] {
				junk[i][j] = -1
			}
		}
		runtime.GC()
	}
}

func TestScenario1WrapKeepsGoMemoryAlive(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	s := testenv.NewStream(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	v = nil // only the buffer refers to the memory now
	churn()
	memtest.SumOnDevice(t, m, s, b, n, out, 0)
	testenv.Must(t, b.Use(s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if got := memtest.ReadInt64(t, out); got != want {
		t.Fatalf("sum over wrapped memory after GC = %d, want %d", got, want)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}

func TestScenario2FreeWhileGPUBusyWaits(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	v = nil
	g.Hold(t, s)
	memtest.SumOnDevice(t, m, s, b, n, out, 0)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	b = nil
	churn()
	if st := hostmem.ReadStats(); st.Pending != 1 || st.Registrations != 1 {
		t.Fatalf("while the GPU is held: %+v, want 1 pending release of 1 registration", st)
	}
	memtest.StillHeld(t) // and after giving the reaper time to be wrong
	g.Open()
	testenv.Must(t, libcuda.StreamSynchronize(s))
	churn()
	if got := memtest.ReadInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	memtest.Drain(t)
}

func TestScenario3WrapAgainRightAfterFreeReusesTheRegistration(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	registers := hostmem.ReadStats().Registers
	g.Hold(t, s)
	memtest.SumOnDevice(t, m, s, b, n, out, 0)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	again, err := hostmem.Wrap(cu, v) // the release is still pending
	if err != nil {
		t.Fatalf("wrapping again during the pending release: %v", err)
	}
	half, err := hostmem.Wrap(cu, v[n/4:n/2]) // inside it
	testenv.Must(t, err)
	if got := hostmem.ReadStats().Registers; got != registers {
		t.Errorf("wrapping again registered %d more times, want 0", got-registers)
	}
	g.Open()
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if got := memtest.ReadInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	testenv.MustBounded(t, "again.Free", again.Free)
	testenv.MustBounded(t, "half.Free", half.Free)
	memtest.Drain(t)
}

func TestScenario4StreamDestroyedBeforeFree(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	g := testenv.NewGate(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	var s libcuda.Stream
	testenv.Must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	g.Hold(t, s)
	memtest.SumOnDevice(t, m, s, b, n, out, 0)
	testenv.Must(t, b.Use(s))
	testenv.Must(t, libcuda.StreamDestroy(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	v, b = nil, nil
	churn()
	memtest.StillHeld(t)
	g.Open()
	memtest.DrainReleases(t)
	if got := memtest.ReadInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	memtest.Drain(t)
}

// captureWhile captures a global-mode graph on its own goroutine (locked
// thread) that launches add_one_i32 on data, and runs during in the
// middle of the capture. It returns the graph's error.
func captureWhile(t *testing.T, cu libcuda.Context, m libcuda.Module, data libcuda.Deviceptr, n int, during func()) (*graph.Graph, error) {
	t.Helper()
	addOne := testenv.Kernel(t, m, "add_one_i32")
	type result struct {
		g   *graph.Graph
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		// during may stop this goroutine (a must): the test stops too.
		r.err = errors.New("the function run during the capture stopped its goroutine")
		defer func() { done <- r }()
		r.err = libcuda.WithContext(cu, func() error {
			var s libcuda.Stream
			if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
				return err
			}
			defer libcuda.StreamDestroy(s)
			r.g, r.err = graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
				if err := addOne.Launch(libcuda.Dim3{X: 4}, libcuda.Dim3{X: 256}, 0, s, data, uint64(n)); err != nil {
					return err
				}
				during()
				return nil
			})
			return r.err
		})
	}()
	r := testenv.Recv(t, done, "the capture")
	return r.g, r.err
}

// launchGraph instantiates g, launches it on a new stream and waits.
func launchGraph(t *testing.T, g *graph.Graph) {
	t.Helper()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	s := testenv.NewStream(t)
	testenv.Must(t, e.Launch(s))
	testenv.Must(t, libcuda.StreamSynchronize(s))
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
}

func TestScenario5FreeDuringGlobalCaptureKeepsTheCapture(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	s := testenv.NewStream(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	memtest.SumOnDevice(t, m, s, b, n, out, 5*time.Millisecond)
	testenv.Must(t, b.Use(s))
	old := hostmem.SetRetiredLimit(0) // unregister at once, during the capture
	defer hostmem.SetRetiredLimit(old)

	const k = 1024
	var data libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&data, k*4))
	defer func() { testenv.Must(t, libcuda.MemFree(data)) }()
	testenv.Must(t, libcuda.MemsetD32(data, 0, k))
	var during hostmem.Stats
	g, err := captureWhile(t, cu, m, data, k, func() {
		testenv.MustBounded(t, "b.Free", b.Free)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for hostmem.ReadStats().Registrations > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond) // the release and unregister run now
		}
		during = hostmem.ReadStats()
	})
	if err != nil {
		t.Fatalf("the capture was broken by the release: %v", err)
	}
	if during.Registrations != 0 || during.Pending != 0 {
		t.Fatalf("during the capture: %+v, want the release and the unregister done", during)
	}
	launchGraph(t, g)
	got := make([]int32, k)
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&got[0]), data, k*4))
	if got[0] != 1 || got[k-1] != 1 {
		t.Fatalf("the graph's add_one gave %d..%d, want 1", got[0], got[k-1])
	}
	if sum := memtest.ReadInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	memtest.Drain(t)
}

func TestScenario6UnknownUseIsPostponedUntilCapturesEnd(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	const n = 1 << 12
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	out := memtest.DeviceInt64(t)
	// Used on the legacy stream: the release needs a context wait.
	memtest.SumOnDevice(t, m, libcuda.CU_STREAM_LEGACY, b, n, out, 0)
	var data libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&data, 4096))
	defer func() { testenv.Must(t, libcuda.MemFree(data)) }()
	testenv.Must(t, libcuda.MemsetD32(data, 0, 1024))
	var during hostmem.Stats
	g, err := captureWhile(t, cu, m, data, 1024, func() {
		testenv.Must(t, b.Use(libcuda.CU_STREAM_LEGACY))
		testenv.MustBounded(t, "b.Free", b.Free)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for hostmem.ReadStats().Postponed == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		during = hostmem.ReadStats()
	})
	if err != nil {
		t.Fatalf("the capture was broken: %v", err)
	}
	if during.Postponed != 1 || during.Registrations != 1 {
		t.Errorf("during the capture: %+v, want the release postponed with its registration", during)
	}
	launchGraph(t, g)
	testenv.Must(t, libcuda.CtxSynchronize())
	if sum := memtest.ReadInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	memtest.Drain(t)
}

func TestScenario7DroppedBufferIsReleasedAfterTheGPU(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 16
	v, want := memtest.SumSetup(n)
	func() {
		b, err := hostmem.Wrap(cu, v)
		testenv.Must(t, err)
		g.Hold(t, s)
		memtest.SumOnDevice(t, m, s, b, n, out, 0)
		testenv.Must(t, b.Use(s))
	}() // b is dropped without Free
	v = nil
	testenv.Eventually(t, "the dropped buffer's release started by its cleanup", func() bool {
		runtime.GC()
		return hostmem.ReadStats().Pending > 0
	})
	churn()
	memtest.StillHeld(t)
	g.Open()
	testenv.Must(t, libcuda.StreamSynchronize(s))
	if sum := memtest.ReadInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	memtest.Drain(t)
}

func TestScenario8GraphKeepsWrappedMemoryAlive(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	m := testenv.LoadKernels(t)
	out := memtest.DeviceInt64(t)
	const n = 1 << 14
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	testenv.Must(t, err)
	s := testenv.NewStream(t)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		memtest.SumOnDevice(t, m, s, b, n, out, 0)
		return b.Use(s)
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "b.Free", b.Free)
	v, b = nil, nil
	memtest.DrainReleases(t)
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("with the graph alive: %+v, want its registration kept", st)
	}
	churn()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy) // the executable graph still holds the lease
	memtest.DrainReleases(t)                       // trims what is retired
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("with only the executable graph alive: %+v, want its registration kept", st)
	}
	for range 2 {
		testenv.Must(t, libcuda.MemsetD8(out, 0, 8))
		testenv.Must(t, e.Launch(s))
		testenv.Must(t, libcuda.StreamSynchronize(s))
		if sum := memtest.ReadInt64(t, out); sum != want {
			t.Fatalf("graph's sum = %d, want %d", sum, want)
		}
		churn()
	}
	testenv.MustBounded(t, "e.Destroy", e.Destroy)
	memtest.Drain(t)
}
