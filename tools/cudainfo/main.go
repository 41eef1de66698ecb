// Command cudainfo prints what the CUDA driver offers through purecuda: the
// driver library and version, how many of the binding's entry points it
// provides, every device with the attributes that matter for wrapping host
// memory and, beside the driver's view, what NVML tells of it (memory used,
// temperature, power, clocks, MIG mode, processes; the device found by its
// UUID), the versions of NVIDIA's libraries it can load (NVRTC,
// nvJitLink, cuBLAS, cuBLASLt, cuRAND, cuFFT), and a short self-check (a
// copy round trip and one kernel).
//
//	go run ./tools/cudainfo
//
// With no driver it says where it looked and how to point at the library,
// and exits with status 1. Any failed check exits with status 2.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

func main() {
	if err := libcuda.Load(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cudainfo:", err)
		os.Exit(2)
	}
}

func run() error {
	lib, _ := libcuda.Loaded()
	syms, err := libcuda.Symbols()
	if err != nil {
		return err
	}
	var missing []string
	for _, s := range syms {
		if s.Err != nil {
			missing = append(missing, s.Symbol)
		}
	}
	how := "dlsym"
	if lib.ProcAddress {
		how = "cuGetProcAddress_v2"
	}
	fmt.Printf("driver   %s, CUDA %s\n", lib.Path, libcuda.FormatVersion(lib.Version))
	fmt.Printf("bindings %d of %d entry points available (resolved with %s)\n", len(syms)-len(missing), len(syms), how)
	if len(missing) > 0 && len(missing) <= 12 {
		fmt.Printf("         not provided: %v\n", missing)
	}
	libraries()
	if err := libcuda.Init(0); err != nil {
		return fmt.Errorf("cuInit: %w", err)
	}
	var n int32
	if err := libcuda.DeviceGetCount(&n); err != nil {
		return err
	}
	startNVML()
	defer stopNVML()
	fmt.Printf("devices  %d\n", n)
	for i := range n {
		if err := device(i); err != nil {
			return fmt.Errorf("device %d: %w", i, err)
		}
	}
	if n == 0 {
		return errors.New("no device to check")
	}
	return selfCheck()
}

// attributes are the device properties that matter to purecuda.
var attributes = []struct {
	name string
	attr libcuda.Device_attribute
}{
	{"can map host memory", libcuda.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY},
	{"unified addressing", libcuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
	{"pageable memory access", libcuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS},
	{"host register supported", libcuda.CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED},
	{"registered memory at host address", libcuda.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM},
	{"64-bit stream memory ops", libcuda.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS},
	{"concurrent managed access", libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
}

func device(i int32) error {
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, i); err != nil {
		return err
	}
	var name [256]byte
	if err := libcuda.DeviceGetName(&name[0], int32(len(name)), dev); err != nil {
		return err
	}
	var mem uint64
	if err := libcuda.DeviceTotalMem(&mem, dev); err != nil {
		return err
	}
	get := func(a libcuda.Device_attribute) (int32, error) {
		var v int32
		err := libcuda.DeviceGetAttribute(&v, a, dev)
		return v, err
	}
	major, err := get(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
	if err != nil {
		return err
	}
	minor, err := get(libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
	if err != nil {
		return err
	}
	sms, err := get(libcuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	if err != nil {
		return err
	}
	fmt.Printf("\ndevice %d %s\n", i, name[:bytes.IndexByte(name[:], 0)])
	fmt.Printf("  compute capability %d.%d, %d multiprocessors, %.1f GiB\n", major, minor, sms, float64(mem)/(1<<30))
	for _, a := range attributes {
		v, err := get(a.attr)
		if err != nil {
			fmt.Printf("  %-34s unknown (%v)\n", a.name, err)
			continue
		}
		yes := "no"
		if v != 0 {
			yes = "yes"
		}
		fmt.Printf("  %-34s %s\n", a.name, yes)
	}
	nvmlView(dev)
	return nil
}

// selfCheck copies 1 MiB to device 0 and back and runs one kernel on it.
func selfCheck() (err error) {
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, 0); err != nil {
		return err
	}
	var ctx libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&ctx, dev); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, libcuda.DevicePrimaryCtxRelease(dev)) }()
	fmt.Println("\nself-check on device 0")
	return libcuda.WithContext(ctx, func() (err error) {
		const n = 1 << 18 // int32s: 1 MiB
		host := make([]int32, n)
		for i := range host {
			host[i] = int32(i)
		}
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, n*4); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, libcuda.MemFree(d)) }()
		start := time.Now()
		if err := libcuda.MemcpyHtoD(d, unsafe.Pointer(&host[0]), n*4); err != nil {
			return err
		}
		back := make([]int32, n)
		if err := libcuda.MemcpyDtoH(unsafe.Pointer(&back[0]), d, n*4); err != nil {
			return err
		}
		took := time.Since(start)
		for i := range back {
			if back[i] != host[i] {
				return fmt.Errorf("copy round trip: element %d is %d, want %d", i, back[i], host[i])
			}
		}
		fmt.Printf("  copy round trip, 1 MiB  ok (%v)\n", took.Round(time.Microsecond))

		m, err := libcuda.LoadModule(kernels.PTX)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, libcuda.ModuleUnload(m)) }()
		f, err := m.Function("add_one_i32")
		if err != nil {
			return err
		}
		start = time.Now()
		if err := f.Launch(libcuda.Dim3{X: 256}, libcuda.Dim3{X: 256}, 0, 0, d, uint64(n)); err != nil {
			return err
		}
		if err := libcuda.CtxSynchronize(); err != nil {
			return err
		}
		took = time.Since(start)
		if err := libcuda.MemcpyDtoH(unsafe.Pointer(&back[0]), d, n*4); err != nil {
			return err
		}
		for i := range back {
			if back[i] != host[i]+1 {
				return fmt.Errorf("kernel add_one_i32: element %d is %d, want %d", i, back[i], host[i]+1)
			}
		}
		fmt.Printf("  kernel add_one_i32      ok (%v, %s)\n", took.Round(time.Microsecond), runtime.GOARCH)
		return nil
	})
}
