package hostmem

import (
	gosync "sync"

	"github.com/purecuda/purecuda/libcuda"
)

// deviceInfo is what wrapping needs to know about a context's device.
type deviceInfo struct {
	pageable    bool // reads pageable host memory directly
	hostPointer bool // registered memory has its host address on the device
}

var devices gosync.Map // libcuda.Context -> deviceInfo

func deviceOf(ctx libcuda.Context) (deviceInfo, error) {
	if d, ok := devices.Load(ctx); ok {
		return d.(deviceInfo), nil
	}
	var info deviceInfo
	err := libcuda.WithContext(ctx, func() error {
		var dev libcuda.Device
		if err := libcuda.CtxGetDevice(&dev); err != nil {
			return err
		}
		var v int32
		if err := libcuda.DeviceGetAttribute(&v, libcuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev); err != nil {
			return err
		}
		info.pageable = v != 0
		if err := libcuda.DeviceGetAttribute(&v, libcuda.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, dev); err != nil {
			return err
		}
		info.hostPointer = v != 0
		return nil
	})
	if err != nil {
		return deviceInfo{}, err
	}
	devices.Store(ctx, info)
	return info, nil
}
