package cuda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The named getters read the kernel's attributes: sum_i64 declares 8 KiB
// of shared memory (long long part[1024]), and may ask for 48 KiB less
// that of dynamic shared memory until SetAttribute raises it.
func TestFuncAttributeGetters(t *testing.T) {
	f := newFixture(t)
	sum := f.fn(t, "sum_i64")
	static, err := sum.StaticSharedMemory()
	testenv.Must(t, err)
	if static != 8192 {
		t.Errorf("StaticSharedMemory = %d, want 8192", static)
	}
	dyn, err := sum.MaxDynamicSharedMemory()
	testenv.Must(t, err)
	if dyn != 48<<10-static {
		t.Errorf("MaxDynamicSharedMemory = %d, want 48 KiB less the static %d", dyn, static)
	}
	for name, get := range map[string]func() (int, error){
		"MaxThreadsPerBlock": sum.MaxThreadsPerBlock, "PTXVersion": sum.PTXVersion, "BinaryVersion": sum.BinaryVersion,
	} {
		v, err := get()
		testenv.Must(t, err)
		if v <= 0 {
			t.Errorf("%s = %d", name, v)
		}
	}
	for name, get := range map[string]func() (int, error){
		"Registers": sum.Registers, "LocalMemory": sum.LocalMemory, "ConstMemory": sum.ConstMemory,
	} {
		if v, err := get(); err != nil || v < 0 {
			t.Errorf("%s = %d, %v", name, v, err)
		}
	}
	if v, _ := sum.MaxThreadsPerBlock(); v > 1024 {
		t.Errorf("MaxThreadsPerBlock = %d, more than a block can have", v)
	}
}

// Dynamic shared memory past 48 KiB needs SetAttribute first: the launch
// fails with CUDA_ERROR_INVALID_VALUE before, and runs after. A value past
// the device's opt-in limit is refused by the driver, a negative one
// before it.
func TestLaunchWithLargeDynamicSharedMemoryAfterSetAttribute(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{1, 1})
	saxpy := f.fn(t, "saxpy")
	cfg := cuda.Config{Grid: cuda.Grid(1, 1, 1), Block: cuda.Block(32, 1, 1), SharedMem: 100 << 10}
	args := []cuda.Arg{cuda.Int32(2), cuda.Float32(2), x.Arg(), y.Arg()}
	if err := f.s.LaunchWith(saxpy, cfg, args...); !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Fatalf("100 KiB of dynamic shared memory before SetAttribute: %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	testenv.Must(t, saxpy.SetAttribute(cuda.MaxDynamicSharedMemory, 100<<10))
	if v, err := saxpy.MaxDynamicSharedMemory(); err != nil || v != 100<<10 {
		t.Errorf("MaxDynamicSharedMemory after SetAttribute = %d, %v", v, err)
	}
	testenv.Must(t, f.s.LaunchWith(saxpy, cfg, args...))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 5}) {
		t.Errorf("got %v, want [3 5]", got)
	}
	optin, err := f.ctx.Device().Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
	testenv.Must(t, err)
	if err := saxpy.SetAttribute(cuda.MaxDynamicSharedMemory, optin+1); !errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Errorf("SetAttribute past the opt-in limit %d: %v, want CUDA_ERROR_INVALID_VALUE", optin, err)
	}
	if err := saxpy.SetAttribute(cuda.MaxDynamicSharedMemory, -1); err == nil || errors.Is(err, libcuda.CUDA_ERROR_INVALID_VALUE) {
		t.Errorf("a negative SetAttribute: %v, want an error before the driver", err)
	}
	if err := saxpy.SetAttribute(cuda.FuncAttribute(libcuda.CU_FUNC_ATTRIBUTE_NUM_REGS), 1); err == nil {
		t.Error("setting a read-only attribute: no error")
	}
	testenv.Must(t, saxpy.SetAttribute(cuda.PreferredSharedMemoryCarveout, 50))
	testenv.Must(t, saxpy.SetAttribute(cuda.PreferredSharedMemoryCarveout, -1))
}

// Occupancy through package cuda gives what the driver's own calls give
// for the same kernel: MaxActiveBlocksPerSM as
// cuOccupancyMaxActiveBlocksPerMultiprocessor, SuggestedBlockSize as
// cuOccupancyMaxPotentialBlockSize, and SuggestedBlockSizeFunc (worked out
// in Go) as cuOccupancyMaxPotentialBlockSize with the same shared memory
// for every block size.
func TestOccupancyEqualsTheDrivers(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"saxpy", "sum_i64"} {
		fn := f.fn(t, name)
		for _, c := range [][2]int{{32, 0}, {128, 0}, {256, 4096}, {1024, 0}, {96, 40 << 10}, {512, 16 << 10}} {
			got, err := fn.MaxActiveBlocksPerSM(c[0], c[1])
			testenv.Must(t, err)
			var want int32
			testenv.Must(t, libcuda.WithContext(f.ctx.Raw(), func() error {
				return libcuda.OccupancyMaxActiveBlocksPerMultiprocessor(&want, fn.Raw(), int32(c[0]), uint64(c[1]))
			}))
			if got != int(want) {
				t.Errorf("%s: MaxActiveBlocksPerSM(%d, %d) = %d, the driver %d", name, c[0], c[1], got, want)
			}
		}
		for _, smem := range []int{0, 8 << 10, 40 << 10} {
			var wg, wb int32
			testenv.Must(t, libcuda.WithContext(f.ctx.Raw(), func() error {
				return libcuda.OccupancyMaxPotentialBlockSize(&wg, &wb, fn.Raw(), 0, uint64(smem), 0)
			}))
			g, b, err := fn.SuggestedBlockSize(smem)
			testenv.Must(t, err)
			if g != int(wg) || b != int(wb) {
				t.Errorf("%s: SuggestedBlockSize(%d) = %d, %d; the driver %d, %d", name, smem, g, b, wg, wb)
			}
			g, b, err = fn.SuggestedBlockSizeFunc(func(int) int { return smem })
			testenv.Must(t, err)
			if g != int(wg) || b != int(wb) {
				t.Errorf("%s: SuggestedBlockSizeFunc(%d for all) = %d, %d; the driver %d, %d", name, smem, g, b, wg, wb)
			}
			if b <= 0 || g <= 0 {
				t.Errorf("%s: suggested grid %d, block %d", name, g, b)
			}
		}
	}
	saxpy := f.fn(t, "saxpy")
	// Shared memory that grows with the block: the block suggested fits.
	_, b, err := saxpy.SuggestedBlockSizeFunc(func(bs int) int { return bs * 64 })
	testenv.Must(t, err)
	if n, err := saxpy.MaxActiveBlocksPerSM(b, b*64); err != nil || n == 0 {
		t.Errorf("the suggested block %d (with %d bytes) fits %d blocks, %v", b, b*64, n, err)
	}
	if _, err := saxpy.MaxActiveBlocksPerSM(0, 0); err == nil {
		t.Error("MaxActiveBlocksPerSM(0, 0): no error")
	}
	if _, _, err := saxpy.SuggestedBlockSizeFunc(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("SuggestedBlockSizeFunc(nil): %v, want ErrNil", err)
	}
	major, _, err := f.ctx.Device().ComputeCapability()
	testenv.Must(t, err)
	if major >= 9 {
		cfg := cuda.Config{Grid: cuda.Grid(8, 1, 1), Block: cuda.Block(128, 1, 1), Cluster: cuda.Dim3{X: 2}}
		n, err := saxpy.MaxActiveClusters(cfg)
		testenv.Must(t, err)
		if n <= 0 {
			t.Errorf("MaxActiveClusters of clusters of 2 = %d", n)
		}
	}
	if _, err := saxpy.MaxActiveClusters(cuda.Config{Block: cuda.Block(128, 1, 1)}); err == nil {
		t.Error("MaxActiveClusters without a cluster: no error")
	}
}
