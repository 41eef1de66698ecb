//go:build gpu

package cuda_test

import (
	_ "embed"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// internal/kernels/kernels.cu compiled on the H200's toolkit (CUDA 13.0):
//
//	nvcc -cubin -arch=sm_90 -o kernels_sm90.cubin kernels.cu
//	nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75 -o kernels.fatbin kernels.cu
var (
	//go:embed testdata/kernels_sm90.cubin
	cubin []byte
	//go:embed testdata/kernels.fatbin
	fatbin []byte
)

// Cubins and fatbins load like PTX, and their C++ kernels are found by
// their demangled names.
func TestLoadCubinAndFatbin(t *testing.T) {
	f := newFixture(t)
	major, _, err := f.ctx.Device().ComputeCapability()
	testenv.Must(t, err)
	images := map[string][]byte{"fatbin": fatbin}
	if major == 9 {
		images["cubin"] = cubin
	}
	for name, image := range images {
		t.Run(name, func(t *testing.T) {
			m, err := cuda.LoadModule(f.ctx, image)
			testenv.Must(t, err)
			defer testenv.MustBounded(t, "m.Close", m.Close)
			saxpy, err := m.Func("saxpy")
			testenv.Must(t, err)
			scale, err := m.Func("scale<float>(float*, float, unsigned long long)")
			testenv.Must(t, err)
			if _, err := m.Func("ops::offset(int*, int, unsigned long long)"); err != nil {
				t.Error(err)
			}
			x := alloc(t, f.s, []float32{1, 2, 3})
			y := alloc(t, f.s, []float32{1, 1, 1})
			testenv.Must(t, f.s.Launch(saxpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Int32(3), cuda.Float32(2), x.Arg(), y.Arg()))
			testenv.Must(t, f.s.Launch(scale, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), y.Arg(), cuda.Float32(10), cuda.Uint64(3)))
			if got := read(t, f.s, y); !slices.Equal(got, []float32{30, 50, 70}) {
				t.Errorf("got %v", got)
			}
		})
	}
}

// A cooperative launch of a grid larger than the device can hold at once
// is refused by the driver, and the error names cuLaunchKernelEx.
func TestCooperativeLaunchTooLargeIsRefused(t *testing.T) {
	f := newFixture(t)
	coop, err := f.ctx.Device().Attribute(libcuda.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
	testenv.Must(t, err)
	if coop == 0 {
		t.Fatal("the device cannot launch cooperative kernels")
	}
	x := alloc(t, f.s, make([]float32, 4))
	err = f.s.LaunchWith(f.fn(t, "saxpy"), cuda.Config{Grid: cuda.Grid(1<<20, 1, 1), Block: cuda.Block(1024, 1, 1), Cooperative: true},
		cuda.Int32(4), cuda.Float32(1), x.Arg(), x.Arg())
	if !errors.Is(err, libcuda.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) || !strings.Contains(err.Error(), "cuLaunchKernelEx") {
		t.Fatalf("a cooperative grid of 2^20 blocks of 1024 threads: %v, want CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE from cuLaunchKernelEx", err)
	}
}
