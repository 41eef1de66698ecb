package tests

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The suite runs every test against the simulator (default) or the real
// driver (-tags gpu); internal/testenv sets either up.

func TestMain(m *testing.M) { testenv.Main(m) }

// onGPU says whether the suite runs on the real driver.
const onGPU = testenv.OnGPU

// needDriver is kept for the tests' first lines: testenv.Main has already
// loaded and initialised the driver, or the binary did not run.
func needDriver(t testing.TB) { t.Helper() }

// primaryContext retains device ordinal's primary context for the test.
func primaryContext(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.PrimaryContext(t, ordinal)
}

// onPrimary retains device ordinal's primary context for the test and
// makes it current on the test goroutine's locked thread.
func onPrimary(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.OnPrimary(t, ordinal)
}

// onThread locks the test goroutine to its OS thread with ctx current for
// the rest of the test.
func onThread(t testing.TB, ctx libcuda.Context) {
	t.Helper()
	testenv.OnThread(t, ctx)
}

// must fails t at once when err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	testenv.Must(t, err)
}

// unsafePointer is unsafe.Pointer for tests that only pass addresses.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// errorsJoin is errors.Join for cleanups that run several calls.
func errorsJoin(errs ...error) error { return errors.Join(errs...) }

// recv receives from ch, or fails t after testenv.Timeout.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testenv.Recv(t, ch, what)
}
