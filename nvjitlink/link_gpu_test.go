//go:build gpu

package nvjitlink_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nvjitlink"
	"github.com/purecuda/purecuda/nvrtc"
)

// Two translation units compiled by NVRTC to LTO-IR: the kernel calls a
// __device__ function the other defines, so only the link can resolve it.
const (
	helperSource = `__device__ float twice(float v) { return 2 * v; }`
	kernelSource = `__device__ float twice(float v);
extern "C" __global__ void double_all(float *x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] = twice(x[i]);
}`
)

func device(t *testing.T) (*cuda.Context, *cuda.Stream, string, string) {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) == 0 {
		t.Fatal("no device")
	}
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "ctx.Close", ctx.Close) })
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "s.Close", s.Close) })
	arch, err := devs[0].Arch()
	testenv.Must(t, err)
	varch, err := devs[0].VirtualArch()
	testenv.Must(t, err)
	return ctx, s, arch, varch
}

// A module linked by nvJitLink from NVRTC's LTO-IR loads and runs.
func TestModuleLinkedFromNVRTCsLTOIRRuns(t *testing.T) {
	ctx, s, arch, varch := device(t)
	helper, err := nvrtc.Compile(helperSource, nvrtc.Name("helper.cu"), nvrtc.LTOIR(varch))
	testenv.Must(t, err)
	kernel, err := nvrtc.Compile(kernelSource, nvrtc.Name("kernel.cu"), nvrtc.LTOIR(varch))
	testenv.Must(t, err)
	if !helper.LTOIR || len(helper.Code) == 0 || helper.PTX() != "" {
		t.Fatalf("NVRTC's LTO-IR: LTOIR %v, %d bytes", helper.LTOIR, len(helper.Code))
	}
	out, err := nvjitlink.Link(arch, []nvjitlink.Input{
		nvjitlink.LTOIR("helper.cu", helper.Code), nvjitlink.LTOIR("kernel.cu", kernel.Code),
	}, nvjitlink.Optimize(3))
	testenv.Must(t, err)
	major, minor, err := nvjitlink.Version()
	testenv.Must(t, err)
	lib, _ := nvjitlink.Loaded()
	t.Logf("nvjitlink-lto: nvJitLink %d.%d from %s linked %d + %d bytes of LTO-IR into a %d-byte cubin for %s",
		major, minor, lib.Path, len(helper.Code), len(kernel.Code), len(out.Cubin), arch)
	mod, err := cuda.LoadModule(ctx, out.Cubin)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "mod.Close", mod.Close) })
	f, err := mod.Func("double_all")
	testenv.Must(t, err)
	x, err := cuda.Alloc[float32](s, 3)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "x.Free", x.Free) })
	testenv.Must(t, cuda.CopyToDevice(s, x, []float32{1, 2, 3}))
	testenv.Must(t, s.Launch(f, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), x.Arg(), cuda.Int32(3)))
	got := make([]float32, 3)
	testenv.Must(t, cuda.CopyToHost(s, got, x))
	if !slices.Equal(got, []float32{2, 4, 6}) {
		t.Errorf("got %v, want [2 4 6]", got)
	}
}

// A link that leaves a function undefined fails with nvJitLink's log.
func TestLinkOfAnUndefinedFunctionGivesTheLog(t *testing.T) {
	_, _, arch, varch := device(t)
	kernel, err := nvrtc.Compile(kernelSource, nvrtc.Name("kernel.cu"), nvrtc.LTOIR(varch))
	testenv.Must(t, err)
	_, err = nvjitlink.Link(arch, []nvjitlink.Input{nvjitlink.LTOIR("kernel.cu", kernel.Code)})
	var le *nvjitlink.LinkError
	if !errors.As(err, &le) || le.ErrorLog == "" {
		t.Fatalf("linking without twice: %v, want a LinkError with a log", err)
	}
	t.Logf("nvjitlink-undefined: %v", err)
}

// With PTXOutput the link of LTO-IR gives PTX, not a cubin: the whole
// program (the kernel with the helper it calls), which the driver compiles
// when it loads it, and which runs.
func TestLinkedPTXLoadsAndRuns(t *testing.T) {
	ctx, s, arch, varch := device(t)
	helper, err := nvrtc.Compile(helperSource, nvrtc.Name("helper.cu"), nvrtc.LTOIR(varch))
	testenv.Must(t, err)
	kernel, err := nvrtc.Compile(kernelSource, nvrtc.Name("kernel.cu"), nvrtc.LTOIR(varch))
	testenv.Must(t, err)
	out, err := nvjitlink.Link(arch, []nvjitlink.Input{
		nvjitlink.LTOIR("helper.cu", helper.Code), nvjitlink.LTOIR("kernel.cu", kernel.Code),
	}, nvjitlink.PTXOutput(), nvjitlink.Optimize(3), nvjitlink.LineInfo())
	testenv.Must(t, err)
	if out.Cubin != nil || !strings.Contains(string(out.PTX), ".entry double_all") {
		t.Fatalf("a link with PTXOutput: %d bytes of cubin, PTX without double_all:\n%.400s", len(out.Cubin), out.PTX)
	}
	t.Logf("nvjitlink-ptx: %d bytes of linked PTX", len(out.PTX))
	mod, err := cuda.LoadModule(ctx, out.PTX)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, mod.Close()) })
	f, err := mod.Func("double_all")
	testenv.Must(t, err)
	x, err := cuda.Alloc[float32](s, 3)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, x.Free()) })
	testenv.Must(t, cuda.CopyToDevice(s, x, []float32{1, 2, 3}))
	testenv.Must(t, s.Launch(f, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), x.Arg(), cuda.Int32(3)))
	got := make([]float32, 3)
	testenv.Must(t, cuda.CopyToHost(s, got, x))
	if !slices.Equal(got, []float32{2, 4, 6}) {
		t.Errorf("got %v, want [2 4 6]", got)
	}
}
