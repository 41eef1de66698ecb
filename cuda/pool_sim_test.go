//go:build !gpu

package cuda_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// An allocation refused for out of memory trims the pool and tries once
// more: the second try succeeds (the simulator refuses only the first).
// Refused twice, the error matches ErrOutOfMemory.
func TestAllocTrimsThePoolAndRetriesOnOutOfMemory(t *testing.T) {
	f := newFixture(t)
	p, err := cuda.NewMemPool(f.ctx.Device())
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "p.Close", p.Close)
	for _, c := range []struct {
		name, call string
		alloc      func() (cuda.Slice[byte], error)
	}{
		{"Alloc", "cuMemAllocAsync", func() (cuda.Slice[byte], error) { return cuda.Alloc[byte](f.s, 64) }},
		{"AllocFrom", "cuMemAllocFromPoolAsync", func() (cuda.Slice[byte], error) { return cuda.AllocFrom[byte](p, f.s, 64) }},
	} {
		trims := testenv.SimStat(t, "pool_trims")
		testenv.SimFailNext(t, c.call, 1, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
		x, err := c.alloc()
		testenv.Must(t, err)
		testenv.MustBounded(t, "x.Free", x.Free)
		if d := testenv.SimStat(t, "pool_trims") - trims; d != 1 {
			t.Errorf("%s after one out of memory: %d trims, want 1", c.name, d)
		}
		testenv.SimFailNext(t, c.call, 2, libcuda.CUDA_ERROR_OUT_OF_MEMORY)
		if _, err := c.alloc(); !errors.Is(err, cuda.ErrOutOfMemory) {
			t.Errorf("%s refused twice: %v, want ErrOutOfMemory", c.name, err)
		}
	}
}
