package tests

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
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
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	s := newStream(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	v = nil // only the buffer refers to the memory now
	churn()
	sumOnDevice(t, m, s, b, n, out, 0)
	must(t, b.Use(s))
	must(t, libcuda.StreamSynchronize(s))
	if got := readInt64(t, out); got != want {
		t.Fatalf("sum over wrapped memory after GC = %d, want %d", got, want)
	}
	must(t, b.Free())
	drain(t)
}

func TestScenario2FreeWhileGPUBusyWaits(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	s := newStream(t)
	g := newGate(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	v = nil
	g.hold(t, s)
	sumOnDevice(t, m, s, b, n, out, 0)
	must(t, b.Use(s))
	must(t, b.Free())
	b = nil
	churn()
	if st := hostmem.ReadStats(); st.Pending != 1 || st.Registrations != 1 {
		t.Fatalf("while the GPU is held: %+v, want 1 pending release of 1 registration", st)
	}
	stillHeld(t) // and after giving the reaper time to be wrong
	g.open()
	must(t, libcuda.StreamSynchronize(s))
	churn()
	if got := readInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	drain(t)
}

func TestScenario3WrapAgainRightAfterFreeReusesTheRegistration(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	s := newStream(t)
	g := newGate(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	registers := hostmem.ReadStats().Registers
	g.hold(t, s)
	sumOnDevice(t, m, s, b, n, out, 0)
	must(t, b.Use(s))
	must(t, b.Free())
	again, err := hostmem.Wrap(cu, v) // the release is still pending
	if err != nil {
		t.Fatalf("wrapping again during the pending release: %v", err)
	}
	half, err := hostmem.Wrap(cu, v[n/4:n/2]) // inside it
	must(t, err)
	if got := hostmem.ReadStats().Registers; got != registers {
		t.Errorf("wrapping again registered %d more times, want 0", got-registers)
	}
	g.open()
	must(t, libcuda.StreamSynchronize(s))
	if got := readInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	must(t, again.Free())
	must(t, half.Free())
	drain(t)
}

func TestScenario4StreamDestroyedBeforeFree(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	g := newGate(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	var s libcuda.Stream
	must(t, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
	g.hold(t, s)
	sumOnDevice(t, m, s, b, n, out, 0)
	must(t, b.Use(s))
	must(t, libcuda.StreamDestroy(s))
	must(t, b.Free())
	v, b = nil, nil
	churn()
	stillHeld(t)
	g.open()
	drainReleases(t)
	if got := readInt64(t, out); got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	drain(t)
}

// captureWhile captures a global-mode graph on its own goroutine (locked
// thread) that launches add_one_i32 on data, and runs during in the
// middle of the capture. It returns the graph's error.
func captureWhile(t *testing.T, cu libcuda.Context, m libcuda.Module, data libcuda.Deviceptr, n int, during func()) (*graph.Graph, error) {
	t.Helper()
	addOne := kernel(t, m, "add_one_i32")
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
	r := recv(t, done, "the capture")
	return r.g, r.err
}

// launchGraph instantiates g, launches it on a new stream and waits.
func launchGraph(t *testing.T, g *graph.Graph) {
	t.Helper()
	e, err := g.Instantiate()
	must(t, err)
	s := newStream(t)
	must(t, e.Launch(s))
	must(t, libcuda.StreamSynchronize(s))
	must(t, e.Destroy())
	must(t, g.Destroy())
}

func TestScenario5FreeDuringGlobalCaptureKeepsTheCapture(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	s := newStream(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	sumOnDevice(t, m, s, b, n, out, 5*time.Millisecond)
	must(t, b.Use(s))
	old := hostmem.SetRetiredLimit(0) // unregister at once, during the capture
	defer hostmem.SetRetiredLimit(old)

	const k = 1024
	var data libcuda.Deviceptr
	must(t, libcuda.MemAlloc(&data, k*4))
	defer func() { must(t, libcuda.MemFree(data)) }()
	must(t, libcuda.MemsetD32(data, 0, k))
	var during hostmem.Stats
	g, err := captureWhile(t, cu, m, data, k, func() {
		must(t, b.Free())
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
	must(t, libcuda.MemcpyDtoH(unsafePointer(&got[0]), data, k*4))
	if got[0] != 1 || got[k-1] != 1 {
		t.Fatalf("the graph's add_one gave %d..%d, want 1", got[0], got[k-1])
	}
	if sum := readInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	drain(t)
}

func TestScenario6UnknownUseIsPostponedUntilCapturesEnd(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	const n = 1 << 12
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	out := deviceInt64(t)
	// Used on the legacy stream: the release needs a context wait.
	sumOnDevice(t, m, libcuda.CU_STREAM_LEGACY, b, n, out, 0)
	var data libcuda.Deviceptr
	must(t, libcuda.MemAlloc(&data, 4096))
	defer func() { must(t, libcuda.MemFree(data)) }()
	must(t, libcuda.MemsetD32(data, 0, 1024))
	var during hostmem.Stats
	g, err := captureWhile(t, cu, m, data, 1024, func() {
		must(t, b.Use(libcuda.CU_STREAM_LEGACY))
		must(t, b.Free())
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
	must(t, libcuda.CtxSynchronize())
	if sum := readInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	drain(t)
}

func TestScenario7DroppedBufferIsReleasedAfterTheGPU(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	s := newStream(t)
	g := newGate(t)
	out := deviceInt64(t)
	const n = 1 << 16
	v, want := sumSetup(n)
	func() {
		b, err := hostmem.Wrap(cu, v)
		must(t, err)
		g.hold(t, s)
		sumOnDevice(t, m, s, b, n, out, 0)
		must(t, b.Use(s))
	}() // b is dropped without Free
	v = nil
	waitFor(t, "the dropped buffer's release started by its cleanup", func() bool {
		runtime.GC()
		return hostmem.ReadStats().Pending > 0
	})
	churn()
	stillHeld(t)
	g.open()
	must(t, libcuda.StreamSynchronize(s))
	if sum := readInt64(t, out); sum != want {
		t.Fatalf("sum = %d, want %d", sum, want)
	}
	drain(t)
}

func TestScenario8GraphKeepsWrappedMemoryAlive(t *testing.T) {
	noErrorsLogged(t)
	cu := onPrimary(t, 0)
	m := loadKernels(t)
	out := deviceInt64(t)
	const n = 1 << 14
	v, want := sumSetup(n)
	b, err := hostmem.Wrap(cu, v)
	must(t, err)
	s := newStream(t)
	g, err := graph.Capture(s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
		sumOnDevice(t, m, s, b, n, out, 0)
		return b.Use(s)
	})
	must(t, err)
	must(t, b.Free())
	v, b = nil, nil
	drainReleases(t)
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("with the graph alive: %+v, want its registration kept", st)
	}
	churn()
	e, err := g.Instantiate()
	must(t, err)
	must(t, g.Destroy()) // the executable graph still holds the lease
	drainReleases(t)     // trims what is retired
	if st := hostmem.ReadStats(); st.Registrations != 1 {
		t.Fatalf("with only the executable graph alive: %+v, want its registration kept", st)
	}
	for range 2 {
		must(t, libcuda.MemsetD8(out, 0, 8))
		must(t, e.Launch(s))
		must(t, libcuda.StreamSynchronize(s))
		if sum := readInt64(t, out); sum != want {
			t.Fatalf("graph's sum = %d, want %d", sum, want)
		}
		churn()
	}
	must(t, e.Destroy())
	drain(t)
}
