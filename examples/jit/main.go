// Command jit compiles a CUDA C++ kernel from a Go string at run time with
// NVRTC, loads it with package cuda, launches it and checks its result.
// The kernel is specialised before it is compiled: the polynomial's
// coefficients become constants of the source, which an ahead-of-time
// build could not do. The kernel has C++ linkage: Module.Func finds it by
// its C++ name, and the launch is checked against its parameter types
// (const double*, double*, int).
//
//	go run ./examples/jit
//
// It exits 1 when something fails: no driver, no NVRTC (set
// PURECUDA_LIBNVRTC), a compile error (the log is printed) or a wrong
// result.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/purecuda/purecuda/cuda"
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

__global__ void poly(const double *x, double *y, int n) {
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
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errors.New("no CUDA device")
	}
	arch, err := devs[0].Arch() // "sm_90" on an H200
	if err != nil {
		return err
	}
	coeffs := []float64{1, -2, 0.5, 3}
	out, err := nvrtc.Compile(kernelSource(coeffs), nvrtc.Name("poly.cu"), nvrtc.CUBIN(arch), nvrtc.Flags("-std=c++17"))
	var ce *nvrtc.CompileError
	if errors.As(err, &ce) {
		return fmt.Errorf("the kernel does not compile: %w", err)
	}
	if err != nil {
		return err
	}
	ctx, err := devs[0].Context()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ctx.Close()) }()
	return launch(ctx, out.Code, coeffs)
}

// launch loads the image, evaluates the polynomial on the GPU and compares
// with the same evaluation on the CPU.
func launch(ctx *cuda.Context, image []byte, coeffs []float64) (err error) {
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	mod, err := cuda.LoadModule(ctx, image)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	poly, err := mod.Func("poly") // the C++ name; the entry name is _Z4polyPKdPdi
	if err != nil {
		return err
	}
	const n = 1 << 16
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(i)/n*4 - 2
	}
	dx, err := cuda.Alloc[float64](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dx.Free()) }()
	dy, err := cuda.Alloc[float64](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dy.Free()) }()
	if err := cuda.CopyToDevice(s, dx, x); err != nil {
		return err
	}
	// Checked against poly(const double*, double*, int): a Slice[float32]
	// or a Uint32 here would be refused before the driver.
	if err := s.Launch(poly, cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1), dx.Arg(), dy.Arg(), cuda.Int32(n)); err != nil {
		return err
	}
	if err := cuda.CopyToHost(s, y, dy); err != nil {
		return err
	}
	if err := s.Sync(context.Background()); err != nil {
		return err
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
