package libcuda_test

import (
	"errors"
	"fmt"
	"log"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
)

// Load reports early, and in detail, when no driver can be found.
func ExampleLoad() {
	if err := libcuda.Load(); err != nil {
		log.Fatal(err) // names every place tried and PURECUDA_LIBCUDA
	}
	lib, _ := libcuda.Loaded()
	fmt.Println("CUDA", libcuda.FormatVersion(lib.Version), "from", lib.Path)
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
	err := libcuda.WithContext(ctx, func() error {
		var p libcuda.Deviceptr
		size := uint64(len(data)) * 4
		if err := libcuda.MemAlloc(&p, size); err != nil {
			return err
		}
		err := libcuda.MemcpyHtoD(p, unsafe.Pointer(&data[0]), size)
		return errors.Join(err, libcuda.MemFree(p))
	})
	if err != nil {
		log.Fatal(err)
	}
}

// Errors are Results; compare them with errors.Is.
func ExampleResult() {
	var s libcuda.Stream // a stream created earlier
	switch err := libcuda.StreamQuery(s); {
	case err == nil:
		fmt.Println("idle")
	case errors.Is(err, libcuda.CUDA_ERROR_NOT_READY):
		fmt.Println("busy")
	default:
		log.Fatal(err)
	}
}

// Launch packs Go values as kernel arguments.
func ExampleFunc_Launch() {
	var ptx []byte // PTX from nvcc -ptx, e.g. embedded with //go:embed
	m, err := libcuda.LoadModule(ptx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.ModuleUnload(m); err != nil {
			log.Print(err)
		}
	}()
	addOne, err := m.Function("add_one_i32")
	if err != nil {
		log.Fatal(err)
	}
	var data libcuda.Deviceptr // n int32 on the device
	const n = 1 << 20
	grid, block := libcuda.Dim3{X: n / 256}, libcuda.Dim3{X: 256}
	if err := addOne.Launch(grid, block, 0, libcuda.CU_STREAM_LEGACY, data, uint64(n)); err != nil {
		log.Fatal(err)
	}
}
