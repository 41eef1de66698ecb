package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// AvailableDynamicSharedMemory agrees with MaxActiveBlocksPerSM: with the
// shared memory it gives, that many blocks are resident, and with 1 KiB
// more a block, fewer; more blocks leave each no more.
func TestAvailableDynamicSharedMemoryAgreesWithOccupancy(t *testing.T) {
	f := newFixture(t)
	sum := f.fn(t, "sum_i64") // 8 KiB of static shared memory
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
		max, err := sum.MaxDynamicSharedMemory()
		testenv.Must(t, err)
		if avail > max {
			continue // a launch could not ask for it without SetAttribute
		}
		n, err := sum.MaxActiveBlocksPerSM(block, avail)
		testenv.Must(t, err)
		if n < blocks {
			t.Errorf("with AvailableDynamicSharedMemory(%d, %d) = %d bytes a block, MaxActiveBlocksPerSM = %d", blocks, block, avail, n)
		}
		if avail+1024 <= max {
			if n, err := sum.MaxActiveBlocksPerSM(block, avail+1024); err != nil || n >= blocks {
				t.Errorf("with 1 KiB more than AvailableDynamicSharedMemory(%d, %d) = %d, MaxActiveBlocksPerSM = %d, %v; want fewer", blocks, block, avail, n, err)
			}
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
