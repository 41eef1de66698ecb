package cuda

import (
	"fmt"
	"math"

	"github.com/purecuda/purecuda/libcuda"
)

// OccupancyFlag changes how the occupancy calculations count
// (CUoccupancy_flags): OccupancyDisableCachingOverride.
type OccupancyFlag uint32

// OccupancyDisableCachingOverride makes the occupancy calculations assume
// that global loads are cached in L1 and that the driver may not turn this
// off to fit more blocks (CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE); without
// it the figures are those of the default, where it may.
const OccupancyDisableCachingOverride = OccupancyFlag(libcuda.CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)

// occupancyFlags ORs the flags after checking each is known.
func occupancyFlags(op string, flags []OccupancyFlag) (uint32, error) {
	var v uint32
	for _, f := range flags {
		if f&^OccupancyDisableCachingOverride != 0 {
			return 0, fmt.Errorf("cuda: Func.%s: unknown occupancy flag %#x", op, uint32(f))
		}
		v |= uint32(f)
	}
	return v, nil
}

// AvailableDynamicSharedMemory is the driver's estimate of the most
// dynamic shared memory, in bytes, that each block of blockSize threads may
// ask for so that the given number of such blocks are resident on one
// multiprocessor at once (cuOccupancyAvailableDynamicSMemPerBlock): what a
// kernel that sizes its tiles to the shared memory asks before its launch.
// It is 0 when that many blocks of that size never fit, no more with more
// blocks, and no more than a block may have. It is not exactly what
// MaxActiveBlocksPerSM answers to: given it, the occupancy calculator,
// which rounds shared memory to the carveout it picks, may count fewer
// blocks (an H100 counted one or two fewer). Asking for more than 48 KiB at launch still needs
// SetAttribute(MaxDynamicSharedMemory, ...).
func (f *Func) AvailableDynamicSharedMemory(blocks, blockSize int) (int, error) {
	if blocks <= 0 || blocks > math.MaxInt32 || blockSize <= 0 || blockSize > math.MaxInt32 {
		return 0, fmt.Errorf("cuda: Func.AvailableDynamicSharedMemory(%d, %d): out of range", blocks, blockSize)
	}
	var n uint64
	err := f.do("AvailableDynamicSharedMemory", "cuOccupancyAvailableDynamicSMemPerBlock", func() error {
		return libcuda.OccupancyAvailableDynamicSMemPerBlock(&n, f.raw, int32(blocks), int32(blockSize))
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
