package cuda

import (
	"bytes"

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
func Devices() ([]Device, error) {
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

// TotalMemory is the device's memory in bytes (cuDeviceTotalMem).
func (d Device) TotalMemory() (uint64, error) {
	var n uint64
	if err := libcuda.DeviceTotalMem(&n, d.dev); err != nil {
		return 0, driverErr("cuDeviceTotalMem", err)
	}
	return n, nil
}

// Attribute is one of the device's attributes (cuDeviceGetAttribute).
func (d Device) Attribute(a libcuda.Device_attribute) (int, error) {
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
