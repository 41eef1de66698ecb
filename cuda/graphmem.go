package cuda

import (
	"errors"
	"fmt"
	"runtime"
	gosync "sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/purecuda/purecuda/libcuda"
)

// Graph memory: see Alloc, # Allocating in a capture.

// allocGraph is Alloc on a stream being captured: an allocation in the
// graph. st.mu is held for reading.
func allocGraph[T any](st *streamState, n int, bytes uintptr, cl class) (Slice[T], error) {
	var p libcuda.Deviceptr
	var id uint64
	err := st.ctx.do(func() error {
		var status libcuda.StreamCaptureStatus
		if err := libcuda.StreamGetCaptureInfo(st.raw, &status, &id, nil, nil, nil, nil); err != nil {
			return driverErr("cuStreamGetCaptureInfo", err)
		}
		if err := libcuda.MemAllocAsync(&p, uint64(bytes), st.raw); err != nil {
			return driverErr("cuMemAllocAsync", err)
		}
		return nil
	})
	if err != nil {
		return Slice[T]{}, fmt.Errorf("cuda: Alloc in a capture: %w", err)
	}
	st.ctx.ref()
	h := &allocHandle{class: cl, fin: true}
	a := &h.own
	a.ctx, a.ptr, a.bytes, a.graph, a.capID = st.ctx, p, bytes, true, id
	a.home = st
	a.last.Store(st)
	a.solo.Store(st)
	st.ctx.graphMem.add(h)
	runtime.SetFinalizer(h, finalizeAlloc)
	return Slice[T]{h: h, n: n}, nil
}

// freeInGraph frees a graph allocation in its capture, while that capture
// is open: a mem-free node after the capture's uses on every stream of
// it. done is false, and nothing was done, when the capture has ended:
// the allocation then outlives it and is freed as other memory is, after
// the launches that used it. Either way it leaves the context's list.
func (a *alloc) freeInGraph(used []*streamState) (done bool, err error) {
	a.ctx.graphMem.remove(a.ptr)
	var buf [4]*streamState
	in := buf[:0]
	for _, u := range used {
		u.mu.RLock()
		id, ok := uint64(0), false
		if !u.closed {
			var status libcuda.StreamCaptureStatus
			// Allowed in every capture mode, from any thread; no context
			// needed for a stream's handle.
			ok = libcuda.StreamGetCaptureInfo(u.raw, &status, &id, nil, nil, nil, nil) == nil &&
				status == libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE
		}
		u.mu.RUnlock()
		if ok && id == a.capID {
			in = append(in, u)
		}
	}
	if len(in) == 0 {
		return false, nil
	}
	if err := freeAfter(a.ctx, a.ptr, in); err != nil {
		return true, fmt.Errorf("cuda: Slice.Free in a capture: %w", err)
	}
	return true, a.ctx.unref()
}

// inItsCapture says whether the capture that allocated a graph
// allocation is still open, as the allocating stream says.
func (a *alloc) inItsCapture() bool {
	a.usemu.Lock()
	home := a.home
	a.usemu.Unlock()
	// The caller holds another stream's mu: never wait for this one's (a
	// Close pending on each could make two launches wait for each other).
	// With a Close pending the answer is no, and the launch counts as a
	// use: if no launch allocated it after all, its Free reports the
	// driver's refusal to free it.
	if home == nil || !home.mu.TryRLock() {
		return false
	}
	defer home.mu.RUnlock()
	if home.closed {
		return false
	}
	var status libcuda.StreamCaptureStatus
	var id uint64
	return libcuda.StreamGetCaptureInfo(home.raw, &status, &id, nil, nil, nil, nil) == nil &&
		status == libcuda.CU_STREAM_CAPTURE_STATUS_ACTIVE && id == a.capID
}

// graphMemList is a context's graph allocations that may outlive their
// capture, held weakly (a dropped one is freed by its finalizer), for
// launches to record their use.
type graphMemList struct {
	n  atomic.Int32 // len(list): a launch with none reads this only
	mu gosync.Mutex
	l  []graphMemEntry
}

type graphMemEntry struct {
	h   weak.Pointer[allocHandle]
	ptr libcuda.Deviceptr
}

func (g *graphMemList) add(h *allocHandle) {
	g.mu.Lock()
	g.l = append(g.l, graphMemEntry{weak.Make(h), h.own.ptr})
	g.n.Store(int32(len(g.l)))
	g.mu.Unlock()
}

func (g *graphMemList) remove(p libcuda.Deviceptr) {
	g.mu.Lock()
	for i, e := range g.l {
		if e.ptr == p {
			g.l = append(g.l[:i], g.l[i+1:]...)
			break
		}
	}
	g.n.Store(int32(len(g.l)))
	g.mu.Unlock()
}

// noteGraphLaunch records a graph launch about to be submitted to st as a
// write of every graph allocation of the context that may outlive its
// capture: st waits for the other streams' uses, later uses elsewhere
// wait for it, and Free follows it. st.mu is held for reading.
func (st *streamState) noteGraphLaunch() error {
	gm := &st.ctx.graphMem
	if gm.n.Load() == 0 {
		return nil
	}
	gm.mu.Lock()
	defer gm.mu.Unlock()
	for _, e := range gm.l {
		h := e.h.Value()
		if h == nil {
			continue // dropped: its finalizer frees it
		}
		a := &h.own
		if a.inItsCapture() {
			continue // not launched yet: its capture is open
		}
		if _, err := a.acquire(0); err != nil {
			continue // being freed
		}
		err := a.orderUse(st, Write, 0, a.bytes)
		a.usemu.Lock()
		a.landed = true
		a.usemu.Unlock()
		a.release(st, true)
		if err != nil {
			return err
		}
	}
	return nil
}

// GraphMemStats are a device's figures of graph memory
// (cuDeviceGetGraphMemAttribute), in bytes.
type GraphMemStats struct {
	Used         uint64 // in graph allocations now (CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)
	UsedHigh     uint64 // the most Used since the last ResetGraphMemHigh
	Reserved     uint64 // held by the device for graph allocations (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
	ReservedHigh uint64 // the most Reserved since the last ResetGraphMemHigh
}

// GraphMem returns the device's graph memory figures
// (cuDeviceGetGraphMemAttribute).
func (d Device) GraphMem() (GraphMemStats, error) {
	var s GraphMemStats
	for _, q := range []struct {
		attr libcuda.GraphMem_attribute
		v    *uint64
	}{
		{libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &s.Used},
		{libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &s.UsedHigh},
		{libcuda.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &s.Reserved},
		{libcuda.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &s.ReservedHigh},
	} {
		if err := libcuda.DeviceGetGraphMemAttribute(d.dev, q.attr, unsafe.Pointer(q.v)); err != nil {
			return GraphMemStats{}, driverErr("cuDeviceGetGraphMemAttribute", err)
		}
	}
	return s, nil
}

// ResetGraphMemHigh sets the high-water marks of GraphMem to the current
// figures (cuDeviceSetGraphMemAttribute).
func (d Device) ResetGraphMemHigh() error {
	var err error
	for _, attr := range []libcuda.GraphMem_attribute{libcuda.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, libcuda.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH} {
		var zero uint64
		if e := libcuda.DeviceSetGraphMemAttribute(d.dev, attr, unsafe.Pointer(&zero)); e != nil {
			err = errors.Join(err, driverErr("cuDeviceSetGraphMemAttribute", e))
		}
	}
	return err
}

// GraphMemTrim gives back to the system the memory the device holds for
// graph allocations that no graph uses now (cuDeviceGraphMemTrim).
func (d Device) GraphMemTrim() error {
	if err := libcuda.DeviceGraphMemTrim(d.dev); err != nil {
		return driverErr("cuDeviceGraphMemTrim", err)
	}
	return nil
}
