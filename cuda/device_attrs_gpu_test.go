//go:build gpu

package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// On a device of compute capability 9.0 (H100, H200) the named getters
// give Hopper's figures: 1 KiB of shared memory reserved a block, 227 KiB
// a block may opt in to (228 KiB a multiprocessor), 64 Ki registers and
// at most 32 blocks and 2048 threads a multiprocessor, and pools that
// export to file descriptors. The clocks, the bus and the L2 are logged
// (GPU-figures) for the record.
func TestGPUNamedGettersGiveHoppersFigures(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) == 0 {
		t.Fatal("no device")
	}
	d := devs[0]
	major, minor, err := d.ComputeCapability()
	testenv.Must(t, err)
	if major != 9 || minor != 0 {
		t.Fatalf("compute capability %d.%d: this test knows 9.0's figures only", major, minor)
	}
	get := func(name string, f func() (int, error)) int {
		v, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	for _, c := range []struct {
		name string
		f    func() (int, error)
		want int
	}{
		{"ReservedSharedMemoryPerBlock", d.ReservedSharedMemoryPerBlock, 1024},
		{"SharedMemoryPerBlockOptin", d.SharedMemoryPerBlockOptin, 232448},
		{"SharedMemoryPerMultiprocessor", d.SharedMemoryPerMultiprocessor, 233472},
		{"RegistersPerMultiprocessor", d.RegistersPerMultiprocessor, 65536},
		{"RegistersPerBlock", d.RegistersPerBlock, 65536},
		{"MaxBlocksPerMultiprocessor", d.MaxBlocksPerMultiprocessor, 32},
		{"MaxThreadsPerMultiprocessor", d.MaxThreadsPerMultiprocessor, 2048},
		{"WarpSize", d.WarpSize, 32},
	} {
		if v := get(c.name, c.f); v != c.want {
			t.Errorf("%s = %d, want %d on compute capability 9.0", c.name, v, c.want)
		}
	}
	if ok, err := d.PosixFDHandles(); err != nil || !ok {
		t.Errorf("PosixFDHandles = %v, %v; want true (pool IPC)", ok, err)
	}
	name, _ := d.Name()
	t.Logf("GPU-figures: %s: %d SMs, clock %d kHz, memory clock %d kHz, bus %d bits, L2 %d bytes (persisting up to %d), constant memory %d",
		name, get("MultiprocessorCount", d.MultiprocessorCount), get("ClockRate", d.ClockRate), get("MemoryClockRate", d.MemoryClockRate),
		get("MemoryBusWidth", d.MemoryBusWidth), get("L2CacheSize", d.L2CacheSize), get("MaxPersistingL2CacheSize", d.MaxPersistingL2CacheSize),
		get("TotalConstantMemory", d.TotalConstantMemory))
}
