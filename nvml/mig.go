package nvml

import (
	"errors"
	"fmt"

	"github.com/purecuda/purecuda/internal/dl"
)

// MIGMode says whether Multi-Instance GPU mode is on now and after the
// next reset (nvmlDeviceGetMigMode). A device without MIG gives
// NVML_ERROR_NOT_SUPPORTED.
func (d Device) MIGMode() (current, pending bool, err error) {
	var c, p uint32
	if err := DeviceGetMigMode(d, &c, &p); err != nil {
		return false, false, dl.Failed("nvml", "nvmlDeviceGetMigMode", err)
	}
	return c == NVML_DEVICE_MIG_ENABLE, p == NVML_DEVICE_MIG_ENABLE, nil
}

// MIGDevice is one MIG device of a GPU: the pair of a GPU instance and a
// compute instance in it, which CUDA sees as a device of its own.
type MIGDevice struct {
	Device            Device // its NVML handle, which the Device methods take
	UUID              string // "MIG-...", what CUDA_VISIBLE_DEVICES and cuda.Device.UUID name
	GPUInstanceID     int
	ComputeInstanceID int
}

// MIGDevices lists the MIG devices of a GPU in MIG mode
// (nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex,
// nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId). A GPU in
// MIG mode without instances gives none; one without MIG mode gives
// NVML_ERROR_NOT_SUPPORTED.
func (d Device) MIGDevices() ([]MIGDevice, error) {
	var n uint32
	if err := DeviceGetMaxMigDeviceCount(d, &n); err != nil {
		return nil, dl.Failed("nvml", "nvmlDeviceGetMaxMigDeviceCount", err)
	}
	var migs []MIGDevice
	for i := range n {
		var m Device
		err := DeviceGetMigDeviceHandleByIndex(d, i, &m)
		if errors.Is(err, NVML_ERROR_NOT_FOUND) {
			continue // no MIG device in that slot
		}
		if err != nil {
			return nil, dl.Failed("nvml", "nvmlDeviceGetMigDeviceHandleByIndex", err)
		}
		uuid, err := m.UUID()
		if err != nil {
			return nil, err
		}
		gi, err := uintCall("nvmlDeviceGetGpuInstanceId", func(v *uint32) error { return DeviceGetGpuInstanceId(m, v) })
		if err != nil {
			return nil, err
		}
		ci, err := uintCall("nvmlDeviceGetComputeInstanceId", func(v *uint32) error { return DeviceGetComputeInstanceId(m, v) })
		if err != nil {
			return nil, err
		}
		migs = append(migs, MIGDevice{Device: m, UUID: uuid, GPUInstanceID: int(gi), ComputeInstanceID: int(ci)})
	}
	return migs, nil
}

// IsMIG reports whether d is a MIG device's handle rather than a whole
// GPU's (nvmlDeviceIsMigDeviceHandle).
func (d Device) IsMIG() (bool, error) {
	var v uint32
	if err := DeviceIsMigDeviceHandle(d, &v); err != nil {
		return false, dl.Failed("nvml", "nvmlDeviceIsMigDeviceHandle", err)
	}
	return v != 0, nil
}

// Parent is the GPU a MIG device belongs to
// (nvmlDeviceGetDeviceHandleFromMigDeviceHandle).
func (d Device) Parent() (Device, error) {
	var p Device
	if err := DeviceGetDeviceHandleFromMigDeviceHandle(d, &p); err != nil {
		return 0, dl.Failed("nvml", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", err)
	}
	if p == 0 {
		return 0, fmt.Errorf("nvml: nvmlDeviceGetDeviceHandleFromMigDeviceHandle gave no device")
	}
	return p, nil
}
