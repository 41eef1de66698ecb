package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// AvailableDynamicSharedMemory gives what the driver promises and a
// kernel that sizes its shared memory by it relies on: some memory for a
// number of blocks that fits, no more with more blocks, no more than a
// block may have (the device's opt-in limit less the static shared
// memory), and a launch asking for that much (after SetAttribute past 48
// KiB) that runs. The occupancy calculator is a separate estimate: it
// rounds shared memory to the carveout it picks, and on an H100 it counted
// blocks-1 for 8 blocks, blocks-2 for 16, and still blocks with 1 KiB more
// for 4; only that it places a block is asserted.
func TestAvailableDynamicSharedMemoryAgreesWithOccupancy(t *testing.T) {
	f := newFixture(t)
	sum := f.fn(t, "sum_i64") // 8 KiB of static shared memory
	static, err := sum.StaticSharedMemory()
	testenv.Must(t, err)
	optin, err := f.ctx.Device().SharedMemoryPerBlockOptin()
	testenv.Must(t, err)
	in := alloc(t, f.s, []int64{1, 2, 3})
	out := alloc(t, f.s, []int64{0})
	const block = 64
	prev := -1
	for _, blocks := range []int{4, 8, 16} {
		avail, err := sum.AvailableDynamicSharedMemory(blocks, block)
		testenv.Must(t, err)
		if avail <= 0 {
			t.Fatalf("AvailableDynamicSharedMemory(%d, %d) = %d, want some", blocks, block, avail)
		}
		if prev >= 0 && avail > prev {
			t.Errorf("AvailableDynamicSharedMemory(%d, %d) = %d, more than with fewer blocks (%d)", blocks, block, avail, prev)
		}
		prev = avail
		if avail > optin-static {
			t.Errorf("AvailableDynamicSharedMemory(%d, %d) = %d, more than a block may have (%d less the static %d)", blocks, block, avail, optin, static)
			continue
		}
		if max, err := sum.MaxDynamicSharedMemory(); err != nil || avail > max {
			testenv.Must(t, sum.SetAttribute(cuda.MaxDynamicSharedMemory, avail))
		}
		n, err := sum.MaxActiveBlocksPerSM(block, avail)
		testenv.Must(t, err)
		if n < 1 {
			t.Errorf("with AvailableDynamicSharedMemory(%d, %d) = %d bytes a block, MaxActiveBlocksPerSM = %d, want a block at least", blocks, block, avail, n)
		}
		t.Logf("occupancy: AvailableDynamicSharedMemory(%d, %d) = %d, MaxActiveBlocksPerSM with it %d", blocks, block, avail, n)
		cfg := cuda.Config{Grid: cuda.Grid(blocks, 1, 1), Block: cuda.Block(block, 1, 1), SharedMem: avail}
		if err := f.s.LaunchWith(sum, cfg, in.Arg(), cuda.Uint64(3), out.Arg(), cuda.Uint64(0)); err != nil {
			t.Errorf("a launch of %d blocks of %d with AvailableDynamicSharedMemory = %d bytes each: %v", blocks, block, avail, err)
		} else if got := read(t, f.s, out); got[0] != 6 {
			t.Errorf("the launch with AvailableDynamicSharedMemory(%d, %d) = %d summed %d, want 6", blocks, block, avail, got[0])
		}
	}
	for _, c := range [][2]int{{0, 64}, {1, 0}, {-1, 64}, {1, -1}} {
		if _, err := sum.AvailableDynamicSharedMemory(c[0], c[1]); err == nil {
			t.Errorf("AvailableDynamicSharedMemory(%d, %d) succeeded", c[0], c[1])
		}
	}
}

// The occupancy calculations take OccupancyDisableCachingOverride and
// refuse a flag they do not know, before the driver.
func TestOccupancyFlags(t *testing.T) {
	f := newFixture(t)
	fn := f.fn(t, "add_one_i32")
	plain, err := fn.MaxActiveBlocksPerSM(128, 0)
	testenv.Must(t, err)
	flagged, err := fn.MaxActiveBlocksPerSM(128, 0, cuda.OccupancyDisableCachingOverride)
	testenv.Must(t, err)
	if plain <= 0 || flagged <= 0 || flagged > plain {
		t.Errorf("MaxActiveBlocksPerSM(128, 0) = %d, with OccupancyDisableCachingOverride %d; want some, and no more with the flag", plain, flagged)
	}
	if g, b, err := fn.SuggestedBlockSize(0, cuda.OccupancyDisableCachingOverride); err != nil || g <= 0 || b <= 0 {
		t.Errorf("SuggestedBlockSize(0, OccupancyDisableCachingOverride) = %d, %d, %v", g, b, err)
	}
	if _, err := fn.MaxActiveBlocksPerSM(128, 0, cuda.OccupancyFlag(4)); err == nil {
		t.Error("MaxActiveBlocksPerSM with an unknown flag succeeded")
	}
	if _, _, err := fn.SuggestedBlockSize(0, cuda.OccupancyFlag(2)); err == nil {
		t.Error("SuggestedBlockSize with an unknown flag succeeded")
	}
}
