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
	primary     bool // the context is dev's primary context
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
		var p libcuda.Context
		if err := libcuda.DevicePrimaryCtxRetain(&p, dev); err != nil {
			return err
		}
		info.primary = p == ctx
		return libcuda.DevicePrimaryCtxRelease(dev)
	})
	if err != nil {
		return deviceInfo{}, err
	}
	devices.Store(ctx, info)
	return info, nil
}

// holds counts hostmem's holds on primary contexts; the driver is asked to
// retain a context on its first hold and to release it after its last.
var holds struct {
	mu gosync.Mutex
	n  map[libcuda.Context]int
}

// holdContext keeps ctx alive, if it is a primary context, until the
// returned function is called: a primary context is destroyed when its
// last user releases it, and with it the events and registrations that
// hostmem still has to wait for or end. Other contexts are the caller's to
// keep alive (see the package documentation); held reports which it was.
func holdContext(ctx libcuda.Context) (unhold func(), held bool, err error) {
	info, err := deviceOf(ctx)
	if err != nil {
		return nil, false, err
	}
	if !info.primary {
		return func() {}, false, nil
	}
	holds.mu.Lock()
	defer holds.mu.Unlock()
	if holds.n[ctx] == 0 {
		var p libcuda.Context
		if err := libcuda.DevicePrimaryCtxRetain(&p, info.dev); err != nil {
			return nil, false, fmt.Errorf("hostmem: %w", err)
		}
		if holds.n == nil {
			holds.n = make(map[libcuda.Context]int)
		}
	}
	holds.n[ctx]++
	var once gosync.Once
	return func() {
		once.Do(func() {
			holds.mu.Lock()
			defer holds.mu.Unlock()
			if holds.n[ctx]--; holds.n[ctx] > 0 {
				return
			}
			delete(holds.n, ctx)
			if err := libcuda.DevicePrimaryCtxRelease(info.dev); err != nil {
				slog.Warn("hostmem: releasing the primary context", "err", err)
			}
		})
	}, true, nil
}
