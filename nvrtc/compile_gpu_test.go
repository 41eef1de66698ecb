//go:build gpu

package nvrtc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nvrtc"
)

const saxpySource = `extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
`

const scaleSource = `#include "by.h"
template <typename T> __global__ void scale(T *v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) v[i] = v[i] * T(BY) + T(1);
}
`

// deviceArch is the real architecture of device 0, "sm_90" on an H200.
func deviceArch(t *testing.T) string {
	t.Helper()
	var dev libcuda.Device
	testenv.Must(t, libcuda.DeviceGet(&dev, 0))
	var major, minor int32
	testenv.Must(t, libcuda.DeviceGetAttribute(&major, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
	testenv.Must(t, libcuda.DeviceGetAttribute(&minor, libcuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
	return fmt.Sprintf("sm_%d%d", major, minor)
}

// load loads image into the current context and finds kernel name.
func load(t *testing.T, image []byte, name string) libcuda.Function {
	t.Helper()
	mod, err := libcuda.LoadModule(image)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, libcuda.ModuleUnload(mod)) })
	fn, err := mod.Function(name)
	testenv.Must(t, err)
	return fn
}

// deviceCopy allocates device memory holding a copy of host.
func deviceCopy[T any](t *testing.T, host []T) libcuda.Deviceptr {
	t.Helper()
	size := uint64(len(host)) * uint64(unsafe.Sizeof(host[0]))
	var p libcuda.Deviceptr
	testenv.Must(t, libcuda.MemAlloc(&p, size))
	t.Cleanup(func() { testenv.Must(t, libcuda.MemFree(p)) })
	testenv.Must(t, libcuda.MemcpyHtoD(p, unsafe.Pointer(&host[0]), size))
	return p
}

// hostCopy copies device memory back into host.
func hostCopy[T any](t *testing.T, host []T, p libcuda.Deviceptr) {
	t.Helper()
	testenv.Must(t, libcuda.MemcpyDtoH(unsafe.Pointer(&host[0]), p, uint64(len(host))*uint64(unsafe.Sizeof(host[0]))))
}

// runSaxpy launches saxpy from image on 1000 elements and checks y.
func runSaxpy(t *testing.T, image []byte) {
	t.Helper()
	fn := load(t, image, "saxpy")
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(3*i+1)
	}
	dx, dy := deviceCopy(t, x), deviceCopy(t, y)
	testenv.Must(t, fn.Launch(libcuda.Dim3{X: (n + 127) / 128}, libcuda.Dim3{X: 128}, 0, 0, float32(2), dx, dy, int32(n)))
	testenv.Must(t, libcuda.CtxSynchronize())
	got := make([]float32, n)
	hostCopy(t, got, dy)
	for i := range got {
		if want := 2*x[i] + y[i]; got[i] != want {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
}

func TestSaxpyCompiledToPTXRuns(t *testing.T) {
	testenv.OnPrimary(t, 0)
	start := time.Now()
	testenv.Must(t, nvrtc.Load())
	loadTime := time.Since(start)
	start = time.Now()
	out, err := nvrtc.Compile(saxpySource, nvrtc.Name("saxpy.cu"))
	firstTime := time.Since(start)
	testenv.Must(t, err)
	start = time.Now()
	again, err := nvrtc.Compile(saxpySource, nvrtc.Name("saxpy.cu"))
	secondTime := time.Since(start)
	testenv.Must(t, err)
	t.Logf("saxpy to PTX: loading NVRTC %v, first compile %v, second compile %v", loadTime, firstTime, secondTime)
	if out.CUBIN || !strings.Contains(out.PTX(), ".entry saxpy") || out.Code[len(out.Code)-1] != 0 {
		t.Fatalf("not NUL-terminated PTX with the saxpy entry:\n%s", out.PTX())
	}
	if len(again.Code) == 0 {
		t.Fatal("the second compile gave no code")
	}
	runSaxpy(t, out.Code)
	runSaxpy(t, again.Code)
}

func TestSaxpyCompiledToCUBINForTheDeviceRuns(t *testing.T) {
	testenv.OnPrimary(t, 0)
	arch := deviceArch(t)
	start := time.Now()
	out, err := nvrtc.Compile(saxpySource, nvrtc.CUBIN(arch))
	t.Logf("saxpy to a cubin for %s: %v", arch, time.Since(start))
	testenv.Must(t, err)
	if !out.CUBIN || len(out.Code) < 4 || string(out.Code[:4]) != "\x7fELF" || out.PTX() != "" {
		t.Fatalf("not a cubin: % x", out.Code[:min(16, len(out.Code))])
	}
	runSaxpy(t, out.Code)
}

func TestTemplatedKernelsByLoweredName(t *testing.T) {
	testenv.OnPrimary(t, 0)
	exprs := []string{"scale<float>", "scale<int>"}
	out, err := nvrtc.Compile(scaleSource, nvrtc.CUBIN(deviceArch(t)), nvrtc.Flags("-std=c++17"),
		nvrtc.Header("by.h", "#define BY 3\n"), nvrtc.NameExpressions(exprs...))
	testenv.Must(t, err)
	names := map[string]string{}
	for _, e := range exprs {
		n, err := out.LoweredName(e)
		testenv.Must(t, err)
		if !strings.HasPrefix(n, "_Z") || !strings.Contains(n, "scale") {
			t.Fatalf("LoweredName(%s) = %q, not a mangled scale", e, n)
		}
		names[e] = n
	}
	if names["scale<float>"] == names["scale<int>"] {
		t.Fatalf("both instantiations lower to %s", names["scale<float>"])
	}
	const n = 300
	f := make([]float32, n)
	k := make([]int32, n)
	for i := range f {
		f[i], k[i] = float32(i)/2, int32(i)-7
	}
	df, dk := deviceCopy(t, f), deviceCopy(t, k)
	grid, block := libcuda.Dim3{X: (n + 63) / 64}, libcuda.Dim3{X: 64}
	testenv.Must(t, load(t, out.Code, names["scale<float>"]).Launch(grid, block, 0, 0, df, int32(n)))
	testenv.Must(t, load(t, out.Code, names["scale<int>"]).Launch(grid, block, 0, 0, dk, int32(n)))
	testenv.Must(t, libcuda.CtxSynchronize())
	gf, gk := make([]float32, n), make([]int32, n)
	hostCopy(t, gf, df)
	hostCopy(t, gk, dk)
	for i := range gf {
		if gf[i] != f[i]*3+1 || gk[i] != k[i]*3+1 {
			t.Fatalf("element %d: %v and %d, want %v and %d", i, gf[i], gk[i], f[i]*3+1, k[i]*3+1)
		}
	}
}

func TestSourceWithAnErrorReturnsItsLog(t *testing.T) {
	const bad = `extern "C" __global__ void broken(float *v) {
	v[0] = undeclared_thing;
}
`
	out, err := nvrtc.Compile(bad, nvrtc.Name("broken.cu"))
	var ce *nvrtc.CompileError
	if out != nil || !errors.As(err, &ce) || !errors.Is(err, nvrtc.NVRTC_ERROR_COMPILATION) {
		t.Fatalf("Compile = %v, %v; want a CompileError matching NVRTC_ERROR_COMPILATION", out, err)
	}
	for _, want := range []string{"broken.cu", "undeclared_thing", "error"} {
		if !strings.Contains(ce.Log, want) {
			t.Errorf("the log lacks %q:\n%s", want, ce.Log)
		}
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION") ||
		!strings.Contains(msg, strings.TrimRight(ce.Log, "\n")) {
		t.Errorf("the error does not name the call and carry the log:\n%v", err)
	}
}

func TestAWarningIsInTheLogOfASuccess(t *testing.T) {
	// Two things NVRTC warns about by default: a variable never used and a
	// call of a function marked deprecated.
	const warns = `[[deprecated]] __device__ int old_function() { return 1; }
extern "C" __global__ void k(int *v) {
	int unused_variable = 3;
	v[0] = old_function();
}
`
	out, err := nvrtc.Compile(warns, nvrtc.Name("warns.cu"))
	testenv.Must(t, err)
	if !strings.Contains(out.Log, "warning") || !strings.Contains(out.Log, "warns.cu") {
		t.Errorf("the log of a successful compile lacks the warnings: %q", out.Log)
	}
	t.Logf("log of a successful compile:\n%s", out.Log)
}

func TestVersionAndLoadedLibrary(t *testing.T) {
	major, minor, err := nvrtc.Version()
	testenv.Must(t, err)
	lib, ok := nvrtc.Loaded()
	if !ok || lib.Major != major || lib.Minor != minor || lib.Path == "" {
		t.Fatalf("Loaded() = %+v, %v; Version() = %d.%d", lib, ok, major, minor)
	}
	if major < 12 {
		t.Errorf("NVRTC %d.%d: 12 or later expected", major, minor)
	}
	var cmaj, cmin int32
	testenv.Must(t, nvrtc.GetVersion(&cmaj, &cmin))
	if int(cmaj) != major || int(cmin) != minor {
		t.Errorf("GetVersion = %d.%d, Version = %d.%d", cmaj, cmin, major, minor)
	}
	p, err := nvrtc.GetErrorString(nvrtc.NVRTC_ERROR_COMPILATION)
	if err != nil || p == nil {
		t.Fatalf("GetErrorString = %v, %v", p, err)
	}
	t.Logf("NVRTC %d.%d from %s", major, minor, lib.Path)
}
