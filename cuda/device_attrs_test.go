package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Each named getter reads its own attribute: the same value as Attribute
// of that attribute, and one a device of compute capability 9.0 can have.
func TestDeviceNamedGettersReadTheirAttributes(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) == 0 {
		t.Fatal("no device")
	}
	d := devs[0]
	ints := []struct {
		name string
		get  func() (int, error)
		attr cuda.DeviceAttribute
		min  int
	}{
		{"ClockRate", d.ClockRate, libcuda.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1},
		{"MemoryClockRate", d.MemoryClockRate, libcuda.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1},
		{"MemoryBusWidth", d.MemoryBusWidth, libcuda.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 32},
		{"L2CacheSize", d.L2CacheSize, libcuda.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 1},
		{"ReservedSharedMemoryPerBlock", d.ReservedSharedMemoryPerBlock, libcuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 0},
		{"SharedMemoryPerBlockOptin", d.SharedMemoryPerBlockOptin, libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 48 << 10},
		{"MultiprocessorCount", d.MultiprocessorCount, libcuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1},
		{"WarpSize", d.WarpSize, libcuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
		{"MaxThreadsPerBlock", d.MaxThreadsPerBlock, libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
		{"MaxThreadsPerMultiprocessor", d.MaxThreadsPerMultiprocessor, libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 1024},
		{"RegistersPerBlock", d.RegistersPerBlock, libcuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 1 << 15},
		{"RegistersPerMultiprocessor", d.RegistersPerMultiprocessor, libcuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 1 << 15},
		{"MaxBlocksPerMultiprocessor", d.MaxBlocksPerMultiprocessor, libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 16},
		{"TotalConstantMemory", d.TotalConstantMemory, libcuda.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 << 10},
		{"MaxPersistingL2CacheSize", d.MaxPersistingL2CacheSize, libcuda.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0},
	}
	for _, c := range ints {
		got, err := c.get()
		testenv.Must(t, err)
		want, err := d.Attribute(c.attr)
		testenv.Must(t, err)
		if got != want || got < c.min {
			t.Errorf("%s = %d; Attribute(%v) = %d, want equal and at least %d", c.name, got, c.attr, want, c.min)
		}
	}
	bools := []struct {
		name string
		get  func() (bool, error)
		attr cuda.DeviceAttribute
	}{
		{"ECCEnabled", d.ECCEnabled, libcuda.CU_DEVICE_ATTRIBUTE_ECC_ENABLED},
		{"ConcurrentManagedAccess", d.ConcurrentManagedAccess, libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
		{"ConcurrentKernels", d.ConcurrentKernels, libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS},
		{"StreamPrioritiesSupported", d.StreamPrioritiesSupported, libcuda.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED},
		{"CanMapHostMemory", d.CanMapHostMemory, libcuda.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY},
		{"HostNativeAtomics", d.HostNativeAtomics, libcuda.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED},
		{"KernelExecTimeout", d.KernelExecTimeout, libcuda.CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT},
		{"VirtualMemoryManagement", d.VirtualMemoryManagement, libcuda.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED},
		{"PosixFDHandles", d.PosixFDHandles, libcuda.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED},
		{"GPUDirectRDMA", d.GPUDirectRDMA, libcuda.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED},
		{"IPCEvents", d.IPCEvents, libcuda.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED},
		{"MultiGPUBoard", d.MultiGPUBoard, libcuda.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD},
	}
	for _, c := range bools {
		got, err := c.get()
		testenv.Must(t, err)
		want, err := d.Attribute(c.attr)
		testenv.Must(t, err)
		if got != (want != 0) {
			t.Errorf("%s = %v; Attribute(%v) = %d", c.name, got, c.attr, want)
		}
	}
	mode, err := d.ComputeMode()
	testenv.Must(t, err)
	if want, _ := d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE); int(mode) != want || mode == libcuda.CU_COMPUTEMODE_PROHIBITED {
		t.Errorf("ComputeMode = %v; Attribute = %d (the suite runs kernels on it: not prohibited)", mode, want)
	}
	// The figures occupancy reasoning combines: blocks that fit by shared
	// memory, with the driver's reservation, never exceed what a
	// multiprocessor has.
	smem, err := d.SharedMemoryPerMultiprocessor()
	testenv.Must(t, err)
	optin, _ := d.SharedMemoryPerBlockOptin()
	reserved, _ := d.ReservedSharedMemoryPerBlock()
	if optin+reserved > smem {
		t.Errorf("a block's opt-in shared memory %d and the reservation %d exceed the multiprocessor's %d", optin, reserved, smem)
	}
}
