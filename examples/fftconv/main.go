// Command fftconv convolves an image with a filter on the GPU through the
// convolution theorem, as image-processing and micromagnetics codes do:
// both are transformed with cuFFT (R2C, package cufft), their spectra are
// multiplied point by point by a kernel compiled at run time with NVRTC
// (package nvrtc), and the product is transformed back (C2R). The result
// is checked against the direct (circular) convolution computed on the
// CPU.
//
//	go run ./examples/fftconv
//
// It exits 1 when something fails: no driver, no cuFFT (set
// PURECUDA_LIBCUFFT) or NVRTC (PURECUDA_LIBNVRTC), a compile error, or a
// result that differs from the CPU's.
package main

import (
	"errors"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/nvrtc"
)

// multiplySource multiplies two half spectra point by point, with the
// 1/(nx*ny) that cuFFT's unnormalised inverse leaves out. extern "C": the
// launch is checked by the parameters' sizes.
const multiplySource = `
extern "C" __global__ void multiply(const float2 *a, const float2 *b, float2 *c, int n, float scale) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float2 x = a[i], y = b[i];
		c[i] = make_float2((x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale);
	}
}
`

const ny, nx = 128, 192 // the image, rows by columns
const fy, fx = 5, 7     // the filter

func main() {
	log.SetFlags(0)
	log.SetPrefix("fftconv: ")
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
	arch, err := devs[0].Arch()
	if err != nil {
		return err
	}
	out, err := nvrtc.Compile(multiplySource, nvrtc.Name("multiply.cu"), nvrtc.CUBIN(arch))
	if err != nil {
		return fmt.Errorf("compiling the product kernel: %w", err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ctx.Close()) }()
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	mod, err := cuda.LoadModule(ctx, out.Code)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	multiply, err := mod.Func("multiply")
	if err != nil {
		return err
	}

	r := rand.New(rand.NewPCG(1, 2))
	img := make([]float32, ny*nx)
	for i := range img {
		img[i] = r.Float32()
	}
	filter := make([]float32, ny*nx) // the filter, zero-padded to the image's size
	for i := range fy {
		for j := range fx {
			filter[i*nx+j] = r.Float32() - 0.5
		}
	}
	got, err := convolve(s, multiply, img, filter)
	if err != nil {
		return err
	}
	want := direct(img, filter)
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i])-want[i]))
	}
	if worst > 1e-4 {
		return fmt.Errorf("the GPU's convolution differs from the CPU's by up to %g", worst)
	}
	fmt.Printf("%dx%d image * %dx%d filter through R2C, product, C2R: GPU and CPU agree within %.1g\n", ny, nx, fy, fx, worst)
	return nil
}

// convolve is the circular convolution of img and filter (both ny x nx)
// on the GPU: R2C of each, their product by the multiply kernel, C2R.
func convolve(s *cuda.Stream, multiply *cuda.Func, img, filter []float32) (got []float32, err error) {
	fwd, err := cufft.NewPlan(s, cufft.CUFFT_R2C, cufft.Shape{N: []int{ny, nx}})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, fwd.Close()) }()
	inv, err := cufft.NewPlan(s, cufft.CUFFT_C2R, cufft.Shape{N: []int{ny, nx}})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, inv.Close()) }()

	const half = ny * (nx/2 + 1) // R2C's output: nx/2+1 per row
	var frees []func() error
	defer func() {
		for _, free := range frees {
			err = errors.Join(err, free())
		}
	}()
	reals := make([]cuda.Slice[float32], 3) // the image, the filter, the result
	spectra := make([]cuda.Slice[complex64], 3)
	for i := range 3 {
		if reals[i], err = cuda.Alloc[float32](s, ny*nx); err != nil {
			return nil, err
		}
		frees = append(frees, reals[i].Free)
		if spectra[i], err = cuda.Alloc[complex64](s, half); err != nil {
			return nil, err
		}
		frees = append(frees, spectra[i].Free)
	}
	if err := cuda.CopyToDevice(s, reals[0], img); err != nil {
		return nil, err
	}
	if err := cuda.CopyToDevice(s, reals[1], filter); err != nil {
		return nil, err
	}
	for i := range 2 {
		if err := fwd.R2C(reals[i], spectra[i]); err != nil {
			return nil, err
		}
	}
	const block = 256
	err = s.Launch(multiply, cuda.Grid((half+block-1)/block, 1, 1), cuda.Block(block, 1, 1),
		spectra[0].Arg(), spectra[1].Arg(), spectra[2].Arg(), cuda.Int32(half), cuda.Float32(1.0/(nx*ny)))
	if err != nil {
		return nil, err
	}
	if err := inv.C2R(spectra[2], reals[2]); err != nil {
		return nil, err
	}
	got = make([]float32, ny*nx)
	if err := cuda.CopyToHost(s, got, reals[2]); err != nil {
		return nil, err
	}
	return got, nil
}

// direct is the circular convolution of img and filter on the CPU, by
// its definition: out[y][x] = Σ filter[i][j] img[y-i][x-j], indices modulo
// the size.
func direct(img, filter []float32) []float64 {
	out := make([]float64, ny*nx)
	for y := range ny {
		for x := range nx {
			var v float64
			for i := range fy {
				for j := range fx {
					v += float64(filter[i*nx+j]) * float64(img[((y-i+ny)%ny)*nx+(x-j+nx)%nx])
				}
			}
			out[y*nx+x] = v
		}
	}
	return out
}
