package hostmem

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// deviceInfo is what wrapping needs to know about a context's device.
type deviceInfo struct {
	dev         libcuda.Device
	primary     bool   // the context is dev's primary context
	pageable    bool   // reads pageable host memory directly
	hostPointer bool   // registered memory has its host address on the device
	id          uint64 // the context's unique id (cuCtxGetId); 0 where unknown
}

// devices caches deviceOf by context handle and unique id: the driver may
// give a destroyed context's handle to a new context, of another device or
// kind, but never its id. It is emptied when it grows past maxDevices
// entries, which only contexts made and destroyed again and again reach.
var devices struct {
	mu gosync.Mutex
	m  map[ctxKey]deviceInfo
}

type ctxKey struct {
	ctx libcuda.Context
	id  uint64 // cuCtxGetId; 0 before CUDA 12.0
}

const maxDevices = 256

func deviceOf(ctx libcuda.Context) (deviceInfo, error) {
	k := ctxKey{ctx: ctx}
	if err := libcuda.CtxGetId(ctx, &k.id); err != nil && !errors.Is(err, libcuda.ErrSymbol) {
		return deviceInfo{}, fmt.Errorf("hostmem: context %#x: %w", uintptr(ctx), dl.Failed("", "cuCtxGetId", err))
	}
	devices.mu.Lock()
	d, ok := devices.m[k]
	devices.mu.Unlock()
	if ok {
		return d, nil
	}
	info := deviceInfo{id: k.id}
	err := libcuda.WithContext(ctx, func() error {
		var dev libcuda.Device
		if err := libcuda.CtxGetDevice(&dev); err != nil {
			return dl.Failed("", "cuCtxGetDevice", err)
		}
		info.dev = dev
		var v int32
		if err := libcuda.DeviceGetAttribute(&v, libcuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev); err != nil {
			return dl.Failed("", "cuDeviceGetAttribute(PAGEABLE_MEMORY_ACCESS)", err)
		}
		info.pageable = v != 0
		if err := libcuda.DeviceGetAttribute(&v, libcuda.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, dev); err != nil {
			return dl.Failed("", "cuDeviceGetAttribute(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)", err)
		}
		info.hostPointer = v != 0
		// ctx can be the primary context only if that one is active;
		// retaining an inactive one would create it.
		var flags uint32
		var active int32
		if err := libcuda.DevicePrimaryCtxGetState(dev, &flags, &active); err != nil {
			return dl.Failed("", "cuDevicePrimaryCtxGetState", err)
		}
		if active == 0 {
			return nil
		}
		var p libcuda.Context
		if err := libcuda.DevicePrimaryCtxRetain(&p, dev); err != nil {
			return dl.Failed("", "cuDevicePrimaryCtxRetain", err)
		}
		info.primary = p == ctx
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			return dl.Failed("", "cuDevicePrimaryCtxRelease", err)
		}
		return nil
	})
	if err != nil {
		return deviceInfo{}, fmt.Errorf("hostmem: context %#x: %w", uintptr(ctx), err)
	}
	devices.mu.Lock()
	if devices.m == nil || len(devices.m) >= maxDevices {
		devices.m = make(map[ctxKey]deviceInfo)
	}
	devices.m[k] = info
	devices.mu.Unlock()
	return info, nil
}

// holds counts hostmem's holds on primary contexts; the driver is asked to
// retain a context on its first hold and to release it after its last.
var holds struct {
	mu gosync.Mutex
	n  map[libcuda.Context]int
}

// hold is one of hostmem's holds on a context; release it exactly once.
type hold struct {
	ctx     libcuda.Context
	dev     libcuda.Device
	primary bool // only primary contexts are held
}

// holdContext keeps ctx alive, if it is a primary context, until the
// hold is released: a primary context is destroyed when its last user
// releases it, and with it the events and registrations that hostmem
// still has to wait for or end. Other contexts are the caller's to keep
// alive (see the package documentation); h.primary says which it was.
func holdContext(ctx libcuda.Context) (h hold, err error) {
	info, err := deviceOf(ctx)
	if err != nil {
		return hold{}, err
	}
	return holdDevice(ctx, info)
}

// holdDevice is holdContext for a caller that knows ctx's deviceOf.
func holdDevice(ctx libcuda.Context, info deviceInfo) (h hold, err error) {
	if !info.primary {
		return hold{ctx: ctx}, nil
	}
	holds.mu.Lock()
	defer holds.mu.Unlock()
	if holds.n[ctx] == 0 {
		var p libcuda.Context
		if err := libcuda.DevicePrimaryCtxRetain(&p, info.dev); err != nil {
			return hold{}, dl.Failed("hostmem", "cuDevicePrimaryCtxRetain", err)
		}
		if holds.n == nil {
			holds.n = make(map[libcuda.Context]int)
		}
	}
	holds.n[ctx]++
	return hold{ctx: ctx, dev: info.dev, primary: true}, nil
}

// release lets the context go; the driver releases it after hostmem's
// last hold.
func (h hold) release() {
	if !h.primary {
		return
	}
	holds.mu.Lock()
	defer holds.mu.Unlock()
	if holds.n[h.ctx]--; holds.n[h.ctx] > 0 {
		return
	}
	delete(holds.n, h.ctx)
	if err := libcuda.DevicePrimaryCtxRelease(h.dev); err != nil {
		slog.Warn("hostmem: releasing the primary context: cuDevicePrimaryCtxRelease", "err", err)
	}
}
