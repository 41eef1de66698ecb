package hostmem_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The examples run in `go test` on the simulator, and under -tags gpu on
// the GPU, with the same output.

// withStream calls f inside WithContext with device 0's primary context
// and a stream of its own.
func withStream(f func(cu libcuda.Context, s libcuda.Stream) error) {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	var cu libcuda.Context
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&cu, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()
	err := libcuda.WithContext(cu, func() error {
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		return errors.Join(f(cu, s), libcuda.StreamDestroy(s))
	})
	if err != nil {
		log.Fatal(err)
	}
}

// Wrap a Go slice, let a kernel change it in place on a stream, and free
// it at once: the memory is released in the background when the kernel
// is done.
func ExampleWrap() {
	withStream(func(cu libcuda.Context, s libcuda.Stream) error {
		m, err := libcuda.LoadModule(kernels.PTX)
		if err != nil {
			return err
		}
		defer func() {
			if err := libcuda.ModuleUnload(m); err != nil {
				log.Print(err)
			}
		}()
		addOne, err := m.Function("add_one_i32") // add_one_i32(int *data, unsigned long long n)
		if err != nil {
			return err
		}

		data := []int32{1, 2, 3, 4}
		buf, err := hostmem.Wrap(cu, data)
		if err != nil {
			return err
		}
		err = addOne.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 32}, 0, s, buf.DevicePtr(), uint64(len(data)))
		if err != nil {
			return errors.Join(err, buf.Free())
		}
		if err := buf.Use(s); err != nil { // the release waits for the kernel
			return errors.Join(err, buf.Free())
		}
		if err := buf.Free(); err != nil { // returns at once
			return err
		}
		if err := sync.Stream(context.Background(), cu, s); err != nil {
			return err
		}
		fmt.Println(data)
		return nil
	})
	// Output: [2 3 4 5]
}

// Alloc gives pinned memory outside the Go heap with the same lifecycle.
func ExampleAlloc() {
	withStream(func(cu libcuda.Context, s libcuda.Stream) error {
		const n = 1024
		buf, err := hostmem.Alloc(cu, n*4)
		if err != nil {
			return err
		}
		fmt.Println("size:", buf.Size())
		if err := libcuda.MemsetD32Async(buf.DevicePtr(), 9, n, s); err != nil {
			return errors.Join(err, buf.Free())
		}
		if err := buf.Use(s); err != nil {
			return errors.Join(err, buf.Free())
		}
		if err := sync.Stream(context.Background(), cu, s); err != nil {
			return errors.Join(err, buf.Free())
		}
		v := unsafe.Slice((*uint32)(buf.Pointer()), n)
		fmt.Println(v[0], v[n-1])
		return buf.Free() // cuMemFreeHost runs in a later batch
	})
	// Output:
	// size: 4096
	// 9 9
}

// Drain at the end of a program (or a test) waits for every release and
// unregisters what is left.
func ExampleDrain() {
	withStream(func(cu libcuda.Context, s libcuda.Stream) error {
		buf, err := hostmem.Wrap(cu, make([]byte, 64<<10))
		if err != nil {
			return err
		}
		if err := errors.Join(libcuda.MemsetD8Async(buf.DevicePtr(), 1, 64<<10, s), buf.Use(s)); err != nil {
			return errors.Join(err, buf.Free())
		}
		return buf.Free()
	})
	if err := hostmem.Drain(context.Background()); err != nil {
		log.Fatal(err)
	}
	st := hostmem.ReadStats()
	fmt.Printf("%d registrations left, %d releases pending\n", st.Registrations, st.Pending)
	// Output: 0 registrations left, 0 releases pending
}

// Wait in the middle of a program finishes the releases in progress but
// may keep their registrations retired, so wrapping the same memory again
// costs no new registration; Trim then unregisters them when a stall of
// the device does not matter.
func ExampleWait() {
	data := make([]float32, 1<<16)
	withStream(func(cu libcuda.Context, s libcuda.Stream) error {
		for range 3 {
			buf, err := hostmem.Wrap(cu, data)
			if err != nil {
				return err
			}
			if err := errors.Join(libcuda.MemsetD32Async(buf.DevicePtr(), 0, uint64(len(data)), s), buf.Use(s)); err != nil {
				return errors.Join(err, buf.Free())
			}
			if err := buf.Free(); err != nil {
				return err
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hostmem.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("releases pending:", hostmem.ReadStats().Pending)
	hostmem.Trim()
	fmt.Println("retired after Trim:", hostmem.ReadStats().Retired)
	// Output:
	// releases pending: 0
	// retired after Trim: 0
}
