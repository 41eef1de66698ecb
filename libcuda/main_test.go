package libcuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests and examples of libcuda run against the simulator (default) or
// the real driver (-tags gpu), loaded by internal/testenv; the tests of
// package libcuda itself (call, layout, load, result) run in the same
// binary.

func TestMain(m *testing.M) { testenv.Main(m) }

// primaryContext retains device ordinal's primary context for the test.
func primaryContext(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.PrimaryContext(t, ordinal)
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

// must fails t at once when err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	testenv.Must(t, err)
}

// onPrimary makes device ordinal's primary context current on the test
// goroutine's locked thread for the rest of the test.
func onPrimary(t testing.TB, ordinal int) libcuda.Context {
	t.Helper()
	return testenv.OnPrimary(t, ordinal)
}
