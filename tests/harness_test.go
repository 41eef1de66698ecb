package tests

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv. The helpers below are thin wrappers of
// testenv's, named as in tests/ so that tests moved from there read the same.

func TestMain(m *testing.M) { testenv.Main(m) }

// primaryContext retains device ordinal's primary context for the test.
func primaryContext(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.PrimaryContext(t, ordinal)
}

// onPrimary makes device ordinal's primary context current on the test
// goroutine's locked thread for the rest of the test.
func onPrimary(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.OnPrimary(t, ordinal)
}

// onThread locks the test goroutine to its thread with ctx current.
func onThread(t testing.TB, ctx libcuda.Context) {
	t.Helper()
	testenv.OnThread(t, ctx)
}

// must fails t at once when err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	testenv.Must(t, err)
}

// gate holds streams until the test opens it (testenv.Gate); host and dev
// are its word.
type gate struct {
	g    *testenv.Gate
	host unsafe.Pointer
	dev  libcuda.Deviceptr
}

func newGate(t testing.TB) *gate {
	t.Helper()
	g := testenv.NewGate(t)
	return &gate{g, g.Host(), g.Dev()}
}

func (g *gate) hold(t testing.TB, s libcuda.Stream) { t.Helper(); g.g.Hold(t, s) }
func (g *gate) open()                               { g.g.Open() }

// newStream creates a non-blocking stream destroyed when the test ends.
func newStream(t testing.TB) libcuda.Stream {
	t.Helper()
	return testenv.NewStream(t)
}

// loadKernels loads the test kernels into the current context.
func loadKernels(t testing.TB) libcuda.Module {
	t.Helper()
	return testenv.LoadKernels(t)
}

// kernel looks up a function of m.
func kernel(t testing.TB, m libcuda.Module, name string) libcuda.Func {
	t.Helper()
	return testenv.Kernel(t, m, name)
}

// osThread is another OS thread with a context current (testenv.OSThread).
type osThread struct{ th *testenv.OSThread }

func newOSThread(t testing.TB, cu libcuda.Context) *osThread {
	t.Helper()
	return &osThread{testenv.NewOSThread(t, cu)}
}

// do runs f on the thread and waits for it, at most testenv.Timeout.
func (th *osThread) do(f func()) { th.th.Do(f) }

// withMode runs f with the calling thread's capture mode set to mode.
func withMode(t testing.TB, mode libcuda.StreamCaptureMode, f func()) {
	t.Helper()
	testenv.WithMode(t, mode, f)
}

// noErrorsLogged fails the test, at its end, if anything was logged at
// level Error.
func noErrorsLogged(t testing.TB) { testenv.NoErrorsLogged(t) }

// recv receives from ch, or fails t after testenv.Timeout.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testenv.Recv(t, ch, what)
}

// unsafePointer is unsafe.Pointer for tests that only pass addresses.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// errorsJoin is errors.Join for cleanups that run several calls.
func errorsJoin(errs ...error) error { return errors.Join(errs...) }

// The release helpers shared with hostmem's tests (internal/testenv/memtest).
var (
	drain         = memtest.Drain
	drainReleases = memtest.DrainReleases
	stillHeld     = memtest.StillHeld
	waitFor       = testenv.Eventually
	sumSetup      = memtest.SumSetup
	sumOnDevice   = memtest.SumOnDevice
	readInt64     = memtest.ReadInt64
	deviceInt64   = memtest.DeviceInt64
)
