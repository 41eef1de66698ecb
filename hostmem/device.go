package hostmem

import (
	"fmt"
	"log/slog"
	gosync "sync"

	"github.com/purecuda/purecuda/libcuda"
)

// deviceInfo is what wrapping needs to know about a context's device.
type deviceInfo struct {
	dev         libcuda.Device
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
		info.dev = dev
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

// holdContext keeps ctx alive, if it is dev's primary context, until the
// returned function is called: a primary context is destroyed when its
// last user releases it, and with it the events and registrations that
// hostmem still has to wait for or end. Other contexts are the caller's to
// keep alive (see the package documentation).
func holdContext(ctx libcuda.Context, dev libcuda.Device) (func(), error) {
	var primary libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&primary, dev); err != nil {
		return nil, fmt.Errorf("hostmem: %w", err)
	}
	if primary != ctx {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			return nil, fmt.Errorf("hostmem: %w", err)
		}
		return func() {}, nil
	}
	var once gosync.Once
	return func() {
		once.Do(func() {
			if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
				slog.Warn("hostmem: releasing the primary context", "err", err)
			}
		})
	}, nil
}
