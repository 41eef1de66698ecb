// Command jit compiles a CUDA C++ kernel from a Go string at run time with
// NVRTC, loads it, launches it and checks its result. The kernel is
// specialised before it is compiled: the polynomial's coefficients become
// constants of the source, which an ahead-of-time build could not do.
//
//	go run ./examples/jit
//
// It exits 1 when something fails: no driver, no NVRTC (set
// PURECUDA_LIBNVRTC), a compile error (the log is printed) or a wrong
// result.
package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nvrtc"
)

// kernelSource evaluates a polynomial with the given coefficients, lowest
// degree first, on every element: Horner's rule, unrolled by the compiler.
func kernelSource(coeffs []float64) string {
	var c []string
	for _, k := range coeffs {
		c = append(c, fmt.Sprintf("%v", k))
	}
	return fmt.Sprintf(`template <int N> struct Poly {
	static __device__ double at(const double (&c)[N], double x) {
		double r = 0;
#pragma unroll
		for (int i = N - 1; i >= 0; i--) r = r * x + c[i];
		return r;
	}
};

extern "C" __global__ void poly(const double *x, double *y, int n) {
	const double c[%d] = {%s};
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = Poly<%d>::at(c, x[i]);
}
`, len(coeffs), strings.Join(c, ", "), len(coeffs))
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("jit: ")
	if err := run(); err != nil {
		log.Print(err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run() (err error) {
	if err := libcuda.Init(0); err != nil {
		return fmt.Errorf("cuInit: %w", err)
	}
	var dev libcuda.Device
	if err := libcuda.DeviceGet(&dev, 0); err != nil {
		return fmt.Errorf("cuDeviceGet: %w", err)
	}
	var major, minor int32
	if err := libcuda.DeviceGetAttribute(&major, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev); err != nil {
		return err
	}
	if err := libcuda.DeviceGetAttribute(&minor, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev); err != nil {
		return err
	}
	coeffs := []float64{1, -2, 0.5, 3}
	out, err := nvrtc.Compile(kernelSource(coeffs), nvrtc.Name("poly.cu"),
		nvrtc.CUBIN(fmt.Sprintf("sm_%d%d", major, minor)), nvrtc.Flags("-std=c++17"))
	var ce *nvrtc.CompileError
	if errors.As(err, &ce) {
		return fmt.Errorf("the kernel does not compile: %w", err)
	}
	if err != nil {
		return err
	}
	var ctx libcuda.Context
	if err := libcuda.DevicePrimaryCtxRetain(&ctx, dev); err != nil {
		return fmt.Errorf("cuDevicePrimaryCtxRetain: %w", err)
	}
	defer func() { err = errors.Join(err, libcuda.DevicePrimaryCtxRelease(dev)) }()
	return libcuda.WithContext(ctx, func() error { return launch(out.Code, coeffs) })
}

// launch loads the image, evaluates the polynomial on the GPU and compares
// with the same evaluation on the CPU.
func launch(image []byte, coeffs []float64) (err error) {
	mod, err := libcuda.LoadModule(image)
	if err != nil {
		return fmt.Errorf("cuModuleLoadData: %w", err)
	}
	defer func() { err = errors.Join(err, libcuda.ModuleUnload(mod)) }()
	fn, err := mod.Function("poly")
	if err != nil {
		return err
	}
	const n = 1 << 16
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(i)/n*4 - 2
	}
	size := uint64(n * 8)
	var dx, dy libcuda.Deviceptr
	if err := libcuda.MemAlloc(&dx, size); err != nil {
		return fmt.Errorf("cuMemAlloc: %w", err)
	}
	defer func() { err = errors.Join(err, libcuda.MemFree(dx)) }()
	if err := libcuda.MemAlloc(&dy, size); err != nil {
		return fmt.Errorf("cuMemAlloc: %w", err)
	}
	defer func() { err = errors.Join(err, libcuda.MemFree(dy)) }()
	if err := libcuda.MemcpyHtoD(dx, unsafe.Pointer(&x[0]), size); err != nil {
		return fmt.Errorf("cuMemcpyHtoD: %w", err)
	}
	if err := fn.Launch(libcuda.Dim3{X: n / 256}, libcuda.Dim3{X: 256}, 0, 0, dx, dy, int32(n)); err != nil {
		return fmt.Errorf("cuLaunchKernel: %w", err)
	}
	if err := libcuda.MemcpyDtoH(unsafe.Pointer(&y[0]), dy, size); err != nil {
		return fmt.Errorf("cuMemcpyDtoH: %w", err)
	}
	for i := range x {
		want := 0.0
		for k := len(coeffs) - 1; k >= 0; k-- {
			want = want*x[i] + coeffs[k]
		}
		if d := y[i] - want; d > 1e-12 || d < -1e-12 {
			return fmt.Errorf("y[%d] = %v, want %v", i, y[i], want)
		}
	}
	fmt.Printf("poly(x) = %v for %d values: GPU and CPU agree\n", coeffs, n)
	return nil
}
