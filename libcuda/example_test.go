package libcuda_test

import (
	"errors"
	"fmt"
	"log"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

// The examples run in `go test` on the simulator, and under -tags gpu on
// the GPU, with the same output: they print no device name, address or
// timing.

// Load reports early, and in detail, when no driver can be found.
func ExampleLoad() {
	if err := libcuda.Load(); err != nil {
		log.Fatal(err) // names every place tried and PURECUDA_LIBCUDA
	}
	lib, _ := libcuda.Loaded()
	fmt.Println("driver API 12.0 or later:", lib.Version >= 12000)
	// Output: driver API 12.0 or later: true
}

// Init initialises the driver; every other call needs it first.
func ExampleInit() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var n int32
	if err := libcuda.DeviceGetCount(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("at least one device:", n >= 1)
	// Output: at least one device: true
}

// DeviceGet names a device by its ordinal; its attributes follow.
func ExampleDeviceGet() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, 0); err != nil {
		log.Fatal(err)
	}
	name := make([]byte, 256)
	var mem uint64
	if err := errors.Join(libcuda.DeviceGetName(&name[0], int32(len(name)), dev), libcuda.DeviceTotalMem(&mem, dev)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("has a name:", name[0] != 0)
	fmt.Println("has memory:", mem > 0)
	// An ordinal past the last device is an error that errors.Is matches.
	var n int32
	if err := libcuda.DeviceGetCount(&n); err != nil {
		log.Fatal(err)
	}
	err := libcuda.DeviceGet(&dev, n)
	fmt.Println(errors.Is(err, libcuda.CUDA_ERROR_INVALID_DEVICE))
	// Output:
	// has a name: true
	// has memory: true
	// true
}

// Driver calls that depend on the current context run inside WithContext.
func ExampleWithContext() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	var ctx libcuda.Context
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&ctx, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()

	data := []float32{1, 2, 3, 4}
	back := make([]float32, len(data))
	err := libcuda.WithContext(ctx, func() error {
		var p libcuda.Deviceptr
		size := uint64(len(data)) * 4
		if err := libcuda.MemAlloc(&p, size); err != nil {
			return err
		}
		err := errors.Join(
			libcuda.MemcpyHtoD(p, unsafe.Pointer(&data[0]), size),
			libcuda.MemcpyDtoH(unsafe.Pointer(&back[0]), p, size))
		return errors.Join(err, libcuda.MemFree(p))
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back)
	// Output: [1 2 3 4]
}

// Errors are Results; compare them with errors.Is, also once wrapped.
func ExampleResult() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	var ctx libcuda.Context
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&ctx, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()
	err := libcuda.WithContext(ctx, func() error {
		m, err := libcuda.LoadModule(kernels.PTX)
		if err != nil {
			return err
		}
		defer func() {
			if err := libcuda.ModuleUnload(m); err != nil {
				log.Print(err)
			}
		}()
		_, err = m.Function("no_such_kernel")
		wrapped := fmt.Errorf("looking up no_such_kernel: %w", err)
		fmt.Println(errors.Is(wrapped, libcuda.CUDA_ERROR_NOT_FOUND))
		fmt.Println(errors.Is(wrapped, libcuda.CUDA_ERROR_NOT_READY))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// true
	// false
}

// LoadModule loads PTX (or a cubin) into the current context; Function
// looks a kernel up by name.
func ExampleLoadModule() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	var ctx libcuda.Context
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&ctx, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()
	err := libcuda.WithContext(ctx, func() error {
		m, err := libcuda.LoadModule(kernels.PTX) // PTX from nvcc -ptx, embedded with //go:embed
		if err != nil {
			return err
		}
		for _, name := range []string{"add_one_i32", "fill_i32"} {
			_, err := m.Function(name)
			fmt.Println(name, err == nil)
		}
		return libcuda.ModuleUnload(m)
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// add_one_i32 true
	// fill_i32 true
}

// Launch packs Go values as kernel arguments.
func ExampleFunc_Launch() {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	var ctx libcuda.Context
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&ctx, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()
	const n = 1 << 12
	out := make([]int32, n)
	err := libcuda.WithContext(ctx, func() error {
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
		var data libcuda.Deviceptr
		if err := libcuda.MemAlloc(&data, n*4); err != nil {
			return err
		}
		grid, block := libcuda.Dim3{X: n / 256}, libcuda.Dim3{X: 256}
		err = errors.Join(
			libcuda.MemsetD32(data, 41, n),
			addOne.Launch(grid, block, 0, libcuda.CU_STREAM_LEGACY, data, uint64(n)),
			libcuda.MemcpyDtoH(unsafe.Pointer(&out[0]), data, n*4)) // waits for the launch
		return errors.Join(err, libcuda.MemFree(data))
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0], out[n-1])
	// Output: 42 42
}
