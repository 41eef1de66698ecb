package libcuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// A generated function returns the driver's Result itself, not wrapped:
// CUDA_ERROR_NOT_READY compares equal and costs no allocation, so callers
// test for it before they wrap anything.
func TestQueryOfABusyStreamIsTheBareNotReady(t *testing.T) {
	testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	g.Hold(t, s)
	var err error
	allocs := testing.AllocsPerRun(100, func() { err = libcuda.StreamQuery(s) })
	if err != libcuda.CUDA_ERROR_NOT_READY {
		t.Fatalf("cuStreamQuery of a held stream = %#v, want the bare CUDA_ERROR_NOT_READY", err)
	}
	if allocs != 0 {
		t.Errorf("a NOT_READY query allocates %v times", allocs)
	}
	g.Open()
	testenv.Must(t, libcuda.StreamSynchronize(s))
}
