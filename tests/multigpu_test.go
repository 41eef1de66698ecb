package tests

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// Tests of several devices. The simulator has two; on a machine with one
// GPU they skip, saying so.

func needDevices(t *testing.T, n int) {
	t.Helper()
	var c int32
	testenv.Must(t, libcuda.DeviceGetCount(&c))
	if int(c) < n {
		t.Skipf("needs %d devices; this machine has %d", n, c)
	}
}

// deviceSetup is one device's context, stream, sum kernel and output word.
type deviceSetup struct {
	ctx libcuda.Context
	s   libcuda.Stream
	sum libcuda.Func
	out libcuda.Deviceptr
}

func setupDevice(t *testing.T, ordinal int) *deviceSetup {
	d := &deviceSetup{ctx: testenv.PrimaryContext(t, ordinal)}
	var m libcuda.Module
	testenv.Must(t, libcuda.WithContext(d.ctx, func() error {
		if err := libcuda.StreamCreate(&d.s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		var err error
		if m, err = libcuda.LoadModule(kernels.PTX); err != nil {
			return err
		}
		if d.sum, err = m.Function("sum_i64"); err != nil {
			return err
		}
		return libcuda.MemAlloc(&d.out, 8)
	}))
	t.Cleanup(func() {
		testenv.Must(t, libcuda.WithContext(d.ctx, func() error {
			if err := libcuda.StreamDestroy(d.s); err != nil {
				return err
			}
			return errors.Join(libcuda.MemFree(d.out), libcuda.ModuleUnload(m))
		}))
	})
	return d
}

func (d *deviceSetup) result(t *testing.T) int64 {
	var v int64
	testenv.Must(t, libcuda.WithContext(d.ctx, func() error {
		if err := libcuda.StreamSynchronize(d.s); err != nil {
			return err
		}
		return libcuda.MemcpyDtoH(unsafe.Pointer(&v), d.out, 8)
	}))
	return v
}

func TestWrappedMemoryUsedOnTwoDevicesIsReleasedAfterBoth(t *testing.T) {
	needDevices(t, 2)
	testenv.NoErrorsLogged(t)
	d0, d1 := setupDevice(t, 0), setupDevice(t, 1)
	testenv.OnThread(t, d0.ctx)
	const n = 1 << 14
	// Either device may finish first: the release waits for the other.
	for first := range 2 {
		gates := []*testenv.Gate{testenv.NewGate(t), testenv.NewGate(t)} // portable: both devices wait on them
		v, want := memtest.SumSetup(n)
		b, err := hostmem.Wrap(d0.ctx, v)
		testenv.Must(t, err)
		for i, d := range []*deviceSetup{d0, d1} {
			testenv.Must(t, libcuda.WithContext(d.ctx, func() error {
				gates[i].Hold(t, d.s)
				return d.sum.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, d.s, b.DevicePtr(), uint64(n), d.out, uint64(0))
			}))
			testenv.Must(t, b.Use(d.s)) // each use's event lives in its stream's context
		}
		testenv.MustBounded(t, "b.Free", b.Free)
		gates[first].Open()
		time.Sleep(20 * time.Millisecond)
		if st := hostmem.ReadStats(); st.Pending != 1 {
			t.Fatalf("with device %d still busy: %+v, want the release pending", 1-first, st)
		}
		gates[1-first].Open()
		if got0, got1 := d0.result(t), d1.result(t); got0 != want || got1 != want {
			t.Fatalf("sums on the two devices: %d and %d, want %d", got0, got1, want)
		}
		memtest.Drain(t)
	}
}

func TestCopiesBetweenDevicesThroughWrappedMemoryAndPeer(t *testing.T) {
	needDevices(t, 2)
	testenv.NoErrorsLogged(t)
	ctx0, ctx1 := testenv.PrimaryContext(t, 0), testenv.PrimaryContext(t, 1)
	const n = 1 << 16
	src := make([]int32, n)
	for i := range src {
		src[i] = int32(3*i + 1)
	}
	var a, c libcuda.Deviceptr // on device 0
	var bdev libcuda.Deviceptr // on device 1
	testenv.Must(t, libcuda.WithContext(ctx0, func() error {
		if err := libcuda.MemAlloc(&a, n*4); err != nil {
			return err
		}
		if err := libcuda.MemAlloc(&c, n*4); err != nil {
			return err
		}
		return libcuda.MemcpyHtoD(a, unsafe.Pointer(&src[0]), n*4)
	}))
	testenv.Must(t, libcuda.WithContext(ctx1, func() error { return libcuda.MemAlloc(&bdev, n*4) }))
	defer func() {
		testenv.Must(t, libcuda.WithContext(ctx0, func() error { return errors.Join(libcuda.MemFree(a), libcuda.MemFree(c)) }))
		testenv.Must(t, libcuda.WithContext(ctx1, func() error { return libcuda.MemFree(bdev) }))
	}()

	// Device 0 -> wrapped host memory -> device 1.
	host := make([]int32, n)
	b, err := hostmem.Wrap(ctx0, host)
	testenv.Must(t, err)
	testenv.Must(t, libcuda.WithContext(ctx0, func() error { return libcuda.MemcpyDtoH(b.Pointer(), a, n*4) }))
	// Device 1 reads it through its device address: the registration is
	// portable and mapped, which a pageable copy would not show.
	testenv.Must(t, libcuda.WithContext(ctx1, func() error { return libcuda.MemcpyDtoD(bdev, b.DevicePtr(), n*4) }))
	// Device 1 -> device 0, peer to peer.
	testenv.Must(t, libcuda.WithContext(ctx0, func() error { return libcuda.MemcpyPeer(c, ctx0, bdev, ctx1, n*4) }))
	back := make([]int32, n)
	testenv.Must(t, libcuda.WithContext(ctx0, func() error { return libcuda.MemcpyDtoH(unsafe.Pointer(&back[0]), c, n*4) }))
	for i := range back {
		if back[i] != src[i] {
			t.Fatalf("element %d is %d after the round trip, want %d", i, back[i], src[i])
		}
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}

func TestCaptureOnOneDeviceWhileMemoryOfTheOtherIsReleased(t *testing.T) {
	needDevices(t, 2)
	testenv.NoErrorsLogged(t)
	d0 := setupDevice(t, 0)
	ctx1 := testenv.PrimaryContext(t, 1)
	testenv.OnThread(t, d0.ctx)
	const n = 1 << 12
	v, want := memtest.SumSetup(n)
	b, err := hostmem.Wrap(d0.ctx, v)
	testenv.Must(t, err)
	testenv.Must(t, d0.sum.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 256}, 0, d0.s, b.DevicePtr(), uint64(n), d0.out, uint64(time.Millisecond)))
	testenv.Must(t, b.Use(d0.s))
	old := hostmem.SetRetiredLimit(0) // unregister during the capture
	defer hostmem.SetRetiredLimit(old)

	m1 := func() libcuda.Module {
		var m libcuda.Module
		testenv.Must(t, libcuda.WithContext(ctx1, func() error {
			var err error
			m, err = libcuda.LoadModule(kernels.PTX)
			return err
		}))
		return m
	}()
	var data libcuda.Deviceptr
	testenv.Must(t, libcuda.WithContext(ctx1, func() error {
		if err := libcuda.MemAlloc(&data, 1024*4); err != nil {
			return err
		}
		return libcuda.MemsetD32(data, 0, 1024)
	}))
	var during hostmem.Stats
	var freeErr error
	g, err := captureWhile(t, ctx1, m1, data, 1024, func() {
		freeErr = b.Free()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for hostmem.ReadStats().Registrations > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		during = hostmem.ReadStats()
	})
	if err != nil {
		t.Fatalf("the capture on device 1 was broken by a release on device 0: %v", err)
	}
	testenv.Must(t, freeErr)
	if during.Registrations != 0 || during.Pending != 0 {
		t.Fatalf("during the capture: %+v; want the release and the unregister done", during)
	}
	testenv.Must(t, libcuda.WithContext(ctx1, func() error {
		e, err := g.Instantiate()
		if err != nil {
			return err
		}
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		return errors.Join(e.Launch(s), libcuda.StreamSynchronize(s), e.Destroy(), g.Destroy(), libcuda.StreamDestroy(s),
			libcuda.MemFree(data), libcuda.ModuleUnload(m1))
	}))
	if got := d0.result(t); got != want {
		t.Fatalf("sum on device 0 = %d, want %d", got, want)
	}
	memtest.Drain(t)
}
