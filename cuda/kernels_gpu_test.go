//go:build gpu

package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nvrtc"
)

// What only a GPU shows of issue 24's kernels and modules; the lead's
// batch prints the lines that start with "kernels-".

// reverseSource reverses n floats through dynamic shared memory: the
// whole array sits in shared memory at once, so n*4 bytes of it must be
// there.
const reverseSource = `extern "C" __global__ void smem_reverse(float *x, int n) {
	extern __shared__ float buf[];
	for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[i];
	__syncthreads();
	for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = buf[n - 1 - i];
}`

// A kernel that uses 100 KiB of dynamic shared memory runs once
// SetAttribute allows it, and not before.
func TestGPULaunchWith100KiBOfDynamicSharedMemory(t *testing.T) {
	f := newFixture(t)
	arch, err := f.ctx.Device().Arch()
	testenv.Must(t, err)
	out, err := nvrtc.Compile(reverseSource, nvrtc.CUBIN(arch))
	testenv.Must(t, err)
	mod, err := cuda.LoadModule(f.ctx, out.Code)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "mod.Close", mod.Close) })
	rev, err := mod.Func("smem_reverse")
	testenv.Must(t, err)
	const smem = 100 << 10
	const n = smem / 4
	x := alloc(t, f.s, seq(n, func(i int) float32 { return float32(i) }))
	cfg := cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(1024, 1, 1), SharedMem: smem}
	err = f.s.LaunchWith(rev, cfg, x.Arg(), cuda.Int32(n))
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Fatalf("100 KiB before SetAttribute: %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	testenv.Must(t, rev.SetAttribute(cuda.MaxDynamicSharedMemory, smem))
	testenv.Must(t, f.s.LaunchWith(rev, cfg, x.Arg(), cuda.Int32(n)))
	got := read(t, f.s, x)
	for i, v := range got {
		if v != float32(n-1-i) {
			t.Fatalf("x[%d] = %v, want %v", i, v, float32(n-1-i))
		}
	}
	regs, err := rev.Registers()
	testenv.Must(t, err)
	blocks, err := rev.MaxActiveBlocksPerSM(1024, smem)
	testenv.Must(t, err)
	t.Logf("kernels-smem: a launch with %d bytes of dynamic shared memory after SetAttribute reversed %d floats; %d registers, %d blocks of 1024 threads per SM", smem, n, regs, blocks)
}

// Occupancy: the figures through package cuda against C's cuOccupancy
// calls, printed for the note.
func TestGPUOccupancyFigures(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"saxpy", "sum_i64"} {
		fn := f.fn(t, name)
		got, err := fn.MaxActiveBlocksPerSM(256, 0)
		testenv.Must(t, err)
		var want int32
		testenv.Must(t, libcuda.WithContext(f.ctx.Raw(), func() error {
			return libcuda.OccupancyMaxActiveBlocksPerMultiprocessor(&want, fn.Raw(), 256, 0)
		}))
		g, b, err := fn.SuggestedBlockSize(0)
		testenv.Must(t, err)
		gf, bf, err := fn.SuggestedBlockSizeFunc(func(int) int { return 0 })
		testenv.Must(t, err)
		var wg, wb int32
		testenv.Must(t, libcuda.WithContext(f.ctx.Raw(), func() error {
			return libcuda.OccupancyMaxPotentialBlockSize(&wg, &wb, fn.Raw(), 0, 0, 0)
		}))
		t.Logf("kernels-occupancy: %s: blocks of 256 per SM %d (C %d); suggested grid, block %d, %d; worked out in Go %d, %d (C %d, %d)",
			name, got, want, g, b, gf, bf, wg, wb)
		if got != int(want) || g != int(wg) || b != int(wb) || gf != int(wg) || bf != int(wb) {
			t.Errorf("%s: package cuda's occupancy differs from C's", name)
		}
	}
}

// A launch of a C++ kernel with an argument of the wrong type is refused
// before the driver, on the GPU as on the simulator.
func TestGPUTypeMismatchedLaunchIsRefused(t *testing.T) {
	f := newFixture(t)
	xi := alloc(t, f.s, []int32{1, 2})
	err := f.s.Launch(f.fn(t, "scale<float>"), cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), xi.Arg(), cuda.Float32(2), cuda.Uint64(2))
	if !errors.Is(err, cuda.ErrArgs) {
		t.Fatalf("int32 memory for float*: %v, want ErrArgs", err)
	}
	t.Logf("kernels-typecheck: %v", err)
	if got := read(t, f.s, xi); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("the refused launch ran: %v", got)
	}
}
