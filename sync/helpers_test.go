package sync_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv, whose helpers they call.

func TestMain(m *testing.M) { testenv.Main(m) }

// deviceInts allocates n int32 of device memory, freed when the test ends.
// The calling thread must have the context current.
func deviceInts(t testing.TB, n int) libcuda.Deviceptr {
	t.Helper()
	var d libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&d, uint64(n*4)))
	testenv.Must(t, libcuda.MemsetD32(d, 0, uint64(n)))
	testenv.Fenced(t, func() {
		if err := libcuda.MemFree(d); err != nil {
			t.Errorf("cuMemFree: %v", err)
		}
	})
	return d
}
