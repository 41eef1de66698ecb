package graph_test

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv. The helpers below are thin wrappers of
// testenv's, named as in tests/ so that tests moved from there read the same.

func TestMain(m *testing.M) { testenv.Main(m) }

// onGPU says whether the tests run on the real driver.
const onGPU = testenv.OnGPU

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

// noErrorsLogged fails the test, at its end, if anything was logged at
// level Error.
func noErrorsLogged(t testing.TB) { testenv.NoErrorsLogged(t) }

// recv receives from ch, or fails t after testenv.Timeout.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testenv.Recv(t, ch, what)
}

// captureModes are the driver's three capture modes.
var captureModes = []libcuda.StreamCaptureMode{
	libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL,
	libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
	libcuda.CU_STREAM_CAPTURE_MODE_RELAXED,
}

// modeName is a capture mode's name in lower case.
func modeName(m libcuda.StreamCaptureMode) string {
	return strings.ToLower(strings.TrimPrefix(m.String(), "CU_STREAM_CAPTURE_MODE_"))
}

// waitAsync starts wait on another goroutine and returns its result channel.
func waitAsync(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

// stillWaiting checks that ch delivers nothing while the work it waits for
// is held: it gives the wait a moment to return wrongly (a loaded machine
// can only make this check miss a fault, never fail a right answer).
func stillWaiting(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned %v before the work ended", what, err)
	case <-time.After(30 * time.Millisecond):
	}
}

// finished checks that ch delivers nil, within testenv.Timeout.
func finished(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	if err := recv(t, ch, what+" to return after the work ended"); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
