package cuda

import "github.com/purecuda/purecuda/libcuda"

// The named getters of this file read one attribute each
// (cuDeviceGetAttribute), so that a program needs no import of libcuda for
// what it asks of a device; Attribute reads any other.

// ClockRate is the device's typical clock frequency in kilohertz
// (CU_DEVICE_ATTRIBUTE_CLOCK_RATE).
func (d Device) ClockRate() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
}

// MemoryClockRate is the peak clock frequency of the device's memory in
// kilohertz (CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE). With MemoryBusWidth
// it gives the peak bandwidth: 2 × rate × 1000 × width / 8 bytes a second
// for double-data-rate memory.
func (d Device) MemoryClockRate() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
}

// ReservedSharedMemoryPerBlock is the shared memory the driver keeps for
// itself in every block, in bytes
// (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK): a multiprocessor
// holds SharedMemoryPerMultiprocessor / (a block's shared memory + this)
// blocks at most.
func (d Device) ReservedSharedMemoryPerBlock() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
}

// RegistersPerBlock is the most 32-bit registers the threads of one block
// may use together (CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK).
func (d Device) RegistersPerBlock() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
}

// RegistersPerMultiprocessor is the number of 32-bit registers of one
// multiprocessor (CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR).
func (d Device) RegistersPerMultiprocessor() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
}

// MaxBlocksPerMultiprocessor is the most blocks one multiprocessor holds
// resident, whatever their size
// (CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR).
func (d Device) MaxBlocksPerMultiprocessor() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
}

// TotalConstantMemory is the constant memory of the device, in bytes
// (CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY).
func (d Device) TotalConstantMemory() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)
}

// MaxPersistingL2CacheSize is the most L2 cache, in bytes, that can be set
// aside for persisting accesses (CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE).
func (d Device) MaxPersistingL2CacheSize() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
}

// ECCEnabled reports whether the device's memory has error correction
// turned on (CU_DEVICE_ATTRIBUTE_ECC_ENABLED).
func (d Device) ECCEnabled() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_ECC_ENABLED)
}

// ComputeMode is who may make contexts on a device (CUcomputemode).
type ComputeMode = libcuda.Computemode

// ComputeMode is the device's compute mode (CU_DEVICE_ATTRIBUTE_COMPUTE_MODE):
// libcuda.CU_COMPUTEMODE_DEFAULT when any process may use it,
// CU_COMPUTEMODE_EXCLUSIVE_PROCESS when one process at a time may,
// CU_COMPUTEMODE_PROHIBITED when none may.
func (d Device) ComputeMode() (ComputeMode, error) {
	v, err := d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
	return ComputeMode(v), err
}

// ConcurrentKernels reports whether kernels of different streams may run
// at the same time (CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS).
func (d Device) ConcurrentKernels() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
}

// StreamPrioritiesSupported reports whether streams may be given
// priorities (CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED).
func (d Device) StreamPrioritiesSupported() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)
}

// CanMapHostMemory reports whether kernels can use mapped pinned host
// memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY).
func (d Device) CanMapHostMemory() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
}

// HostNativeAtomics reports whether atomic operations between the device
// and the host on shared memory are native
// (CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED; NVLink-C2C, as on
// Grace Hopper).
func (d Device) HostNativeAtomics() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED)
}

// KernelExecTimeout reports whether the device limits how long a kernel
// may run (CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: a display is attached).
func (d Device) KernelExecTimeout() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)
}

// VirtualMemoryManagement reports whether the device supports the
// virtual memory calls (cuMemCreate, cuMemMap;
// CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).
func (d Device) VirtualMemoryManagement() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
}

// PosixFDHandles reports whether the device's memory can be exported to
// a POSIX file descriptor
// (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED): what
// an exportable pool (Exportable, MemPool.Export) needs.
func (d Device) PosixFDHandles() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
}

// GPUDirectRDMA reports whether other devices on the PCIe bus (network
// cards) can read and write the device's memory directly
// (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED).
func (d Device) GPUDirectRDMA() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)
}

// IPCEvents reports whether events can be shared between processes
// (Interprocess; CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED).
func (d Device) IPCEvents() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED)
}

// MultiGPUBoard reports whether the device is one of several on one board
// (CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD).
func (d Device) MultiGPUBoard() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD)
}
