package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/purecuda/purecuda/libcuda"
)

// Device is one CUDA device. It is a small value; copy it freely.
type Device struct {
	ordinal int
	dev     libcuda.Device
}

// Devices initialises the driver (cuInit) and returns its devices, in the
// driver's order. It is an error when the driver library cannot be loaded;
// a machine without devices gives an empty list or the driver's error.
//
// When the context of a device was lost in this process (ErrContextLost),
// Devices returns the whole list together with that device's *LostError
// (joined, one for each such device): the process must be restarted to
// use it again; the other devices work as before.
func Devices() ([]Device, error) {
	devs, err := devices()
	return devs, errors.Join(err, lostDevices(devs))
}

// devices lists the devices.
func devices() ([]Device, error) {
	if err := libcuda.Init(0); err != nil {
		return nil, driverErr("cuInit", err)
	}
	var n int32
	if err := libcuda.DeviceGetCount(&n); err != nil {
		return nil, driverErr("cuDeviceGetCount", err)
	}
	devs := make([]Device, 0, n)
	for i := range n {
		var d libcuda.Device
		if err := libcuda.DeviceGet(&d, i); err != nil {
			return nil, driverErr("cuDeviceGet", err)
		}
		devs = append(devs, Device{ordinal: int(i), dev: d})
	}
	return devs, nil
}

// lostDevices joins the errors of the devices lost in this process: of
// devs, or of every device seen when devs is empty (the driver may have
// refused to list them after a fault).
func lostDevices(devs []Device) error {
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	var lost []error
	for d, dv := range devStates.m {
		l := dv.lost.Load()
		if l == nil {
			continue
		}
		if len(devs) == 0 || slices.ContainsFunc(devs, func(x Device) bool { return x.dev == d }) {
			lost = append(lost, l)
		}
	}
	return errors.Join(lost...)
}

// Ordinal is the device's index in Devices.
func (d Device) Ordinal() int { return d.ordinal }

// Raw is the driver's handle of the device.
func (d Device) Raw() libcuda.Device { return d.dev }

// Name is the device's name (cuDeviceGetName).
func (d Device) Name() (string, error) {
	var b [256]byte
	if err := libcuda.DeviceGetName(&b[0], int32(len(b)), d.dev); err != nil {
		return "", driverErr("cuDeviceGetName", err)
	}
	if i := bytes.IndexByte(b[:], 0); i >= 0 {
		return string(b[:i]), nil
	}
	return string(b[:]), nil
}

// ComputeCapability is the device's compute capability, e.g. 9 and 0 for
// an H100 or H200.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// Arch is the device's real architecture as NVRTC and nvJitLink name it:
// "sm_90" on an H100 or H200, for nvrtc.CUBIN and for the -arch of a
// link. VirtualArch is the matching virtual one, for PTX.
func (d Device) Arch() (string, error) {
	major, minor, err := d.ComputeCapability()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sm_%d%d", major, minor), nil
}

// VirtualArch is the device's virtual architecture, "compute_90" on an
// H100 or H200: nvrtc.Flags("-arch=compute_90") makes PTX that the
// driver compiles for this device (and later ones) when it loads it.
func (d Device) VirtualArch() (string, error) {
	major, minor, err := d.ComputeCapability()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("compute_%d%d", major, minor), nil
}

// TotalMemory is the device's memory in bytes (cuDeviceTotalMem).
func (d Device) TotalMemory() (uint64, error) {
	var n uint64
	if err := libcuda.DeviceTotalMem(&n, d.dev); err != nil {
		return 0, driverErr("cuDeviceTotalMem", err)
	}
	return n, nil
}

// Attribute is one of the device's attributes (cuDeviceGetAttribute).
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	var v int32
	if err := libcuda.DeviceGetAttribute(&v, a, d.dev); err != nil {
		return 0, driverErr("cuDeviceGetAttribute("+a.String()+")", err)
	}
	return int(v), nil
}

// MultiprocessorCount is the number of streaming multiprocessors.
func (d Device) MultiprocessorCount() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
}

// MaxThreadsPerBlock is the largest block a kernel can be launched with.
func (d Device) MaxThreadsPerBlock() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
}

// WarpSize is the number of threads of a warp.
func (d Device) WarpSize() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE)
}

// DeviceAttribute names one of a device's attributes for Attribute
// (libcuda's CU_DEVICE_ATTRIBUTE_* values); the named getters below read
// the common ones.
type DeviceAttribute = libcuda.Device_attribute

// UUID is a device's 16-byte identifier (cuDeviceGetUuid), stable across
// processes and the same one NVML and nvidia-smi report.
type UUID [16]byte

// String writes the UUID as nvidia-smi and NVML do:
// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 40)
	b = append(b, "GPU-"...)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&15])
	}
	return string(b)
}

// UUID is the device's identifier (cuDeviceGetUuid).
func (d Device) UUID() (UUID, error) {
	var u libcuda.Uuid
	if err := libcuda.DeviceGetUuid(&u, d.dev); err != nil {
		return UUID{}, driverErr("cuDeviceGetUuid", err)
	}
	return UUID(u.Bytes), nil
}

// PCIBusID is the device's PCI address as the driver writes it
// (cuDeviceGetPCIBusId): domain, bus, device and function in hexadecimal,
// "dddd:bb:dd.f" (NVML writes the domain with eight digits).
func (d Device) PCIBusID() (string, error) {
	var b [64]byte
	if err := libcuda.DeviceGetPCIBusId(&b[0], int32(len(b)), d.dev); err != nil {
		return "", driverErr("cuDeviceGetPCIBusId", err)
	}
	if i := bytes.IndexByte(b[:], 0); i >= 0 {
		return string(b[:i]), nil
	}
	return string(b[:]), nil
}

// CanAccessPeer reports whether kernels on d can read and write memory of
// device peer once peer access is enabled (cuDeviceCanAccessPeer; see
// Context.EnablePeerAccess). A device is not its own peer: d == peer gives
// false.
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	var v int32
	if err := libcuda.DeviceCanAccessPeer(&v, d.dev, peer.dev); err != nil {
		return false, driverErr("cuDeviceCanAccessPeer", err)
	}
	return v != 0, nil
}

// boolAttribute is an attribute whose value is 0 or 1.
func (d Device) boolAttribute(a DeviceAttribute) (bool, error) {
	v, err := d.Attribute(a)
	return v != 0, err
}

// dim3Attribute reads three attributes as the X, Y and Z of a Dim3.
func (d Device) dim3Attribute(x, y, z DeviceAttribute) (Dim3, error) {
	var v Dim3
	var err error
	if v.X, err = d.Attribute(x); err != nil {
		return Dim3{}, err
	}
	if v.Y, err = d.Attribute(y); err != nil {
		return Dim3{}, err
	}
	if v.Z, err = d.Attribute(z); err != nil {
		return Dim3{}, err
	}
	return v, nil
}

// MaxBlockDim is the largest block size in each dimension, in threads.
func (d Device) MaxBlockDim() (Dim3, error) {
	return d.dim3Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
}

// MaxGridDim is the largest grid size in each dimension, in blocks.
func (d Device) MaxGridDim() (Dim3, error) {
	return d.dim3Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
}

// SharedMemoryPerBlock is the shared memory a block has without opting in
// to more, in bytes.
func (d Device) SharedMemoryPerBlock() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
}

// SharedMemoryPerBlockOptin is the most shared memory a block can have
// when its kernel opts in, in bytes.
func (d Device) SharedMemoryPerBlockOptin() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
}

// SharedMemoryPerMultiprocessor is the shared memory of one
// multiprocessor, in bytes.
func (d Device) SharedMemoryPerMultiprocessor() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
}

// MaxThreadsPerMultiprocessor is the number of threads one multiprocessor
// can hold resident.
func (d Device) MaxThreadsPerMultiprocessor() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
}

// L2CacheSize is the size of the L2 cache in bytes.
func (d Device) L2CacheSize() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
}

// MemoryBusWidth is the width of the global memory bus in bits.
func (d Device) MemoryBusWidth() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
}

// AsyncEngineCount is the number of copy engines: copies in different
// directions overlap with each other and with kernels up to this many.
func (d Device) AsyncEngineCount() (int, error) {
	return d.Attribute(libcuda.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
}

// Integrated reports whether the device shares memory with the host (an
// integrated GPU).
func (d Device) Integrated() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_INTEGRATED)
}

// UnifiedAddressing reports whether the device shares one virtual address
// space with the host (every 64-bit platform CUDA supports).
func (d Device) UnifiedAddressing() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
}

// ManagedMemory reports whether the device supports managed memory
// (AllocManaged).
func (d Device) ManagedMemory() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)
}

// ConcurrentManagedAccess reports whether the host and the device can use
// managed memory at the same time (and prefetch and advice take effect);
// without it the host must not touch managed memory while the device may
// be using any.
func (d Device) ConcurrentManagedAccess() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
}

// PageableMemoryAccess reports whether kernels can read and write ordinary
// (pageable) host memory directly, as on Grace Hopper.
func (d Device) PageableMemoryAccess() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
}

// MemoryPoolsSupported reports whether the device has stream-ordered
// memory pools (Context.MemPool, NewMemPool).
func (d Device) MemoryPoolsSupported() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
}

// CooperativeLaunch reports whether the device can launch cooperative
// kernels (Config.Cooperative).
func (d Device) CooperativeLaunch() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
}

// ClusterLaunch reports whether the device can launch thread block
// clusters (Config.Cluster).
func (d Device) ClusterLaunch() (bool, error) {
	return d.boolAttribute(libcuda.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
}
