package hostmem_test

import (
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

// osThread is another OS thread with a context current (testenv.OSThread).
type osThread struct{ th *testenv.OSThread }

func newOSThread(t testing.TB, cu libcuda.Context) *osThread {
	t.Helper()
	return &osThread{testenv.NewOSThread(t, cu)}
}

// do runs f on the thread and waits for it, at most testenv.Timeout.
func (th *osThread) do(f func()) { th.th.Do(f) }

// errorLog records what is logged at level Error (testenv.ErrorLog).
type errorLog struct{ l *testenv.ErrorLog }

func (h *errorLog) messages() []string { return h.l.Messages() }

// captureErrors records slog's errors for the rest of the test.
func captureErrors(t testing.TB) *errorLog { return &errorLog{testenv.CaptureErrors(t)} }

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

// The release helpers shared with the tests of tests/ (internal/testenv/memtest).
var (
	drain         = memtest.Drain
	drainReleases = memtest.DrainReleases
	waitFor       = testenv.Eventually
	sumSetup      = memtest.SumSetup
	sumOnDevice   = memtest.SumOnDevice
	readInt64     = memtest.ReadInt64
	deviceInt64   = memtest.DeviceInt64
)
