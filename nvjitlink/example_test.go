package nvjitlink_test

import (
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/nvjitlink"
	"github.com/purecuda/purecuda/nvrtc"
)

// Link links two translation units that NVRTC compiled to LTO-IR, one
// calling the other's __device__ function, into a cubin for the device.
// (Not run by go test: it needs NVRTC, nvJitLink and a GPU.)
func ExampleLink() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	arch, _ := devs[0].Arch()         // "sm_90"
	varch, _ := devs[0].VirtualArch() // "compute_90"
	helper, err := nvrtc.Compile(`__device__ float twice(float v) { return 2 * v; }`, nvrtc.LTOIR(varch))
	if err != nil {
		log.Fatal(err)
	}
	kernel, err := nvrtc.Compile(`__device__ float twice(float v);
extern "C" __global__ void double_all(float *x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] = twice(x[i]);
}`, nvrtc.LTOIR(varch))
	if err != nil {
		log.Fatal(err)
	}
	out, err := nvjitlink.Link(arch, []nvjitlink.Input{
		nvjitlink.LTOIR("helper.cu", helper.Code), nvjitlink.LTOIR("kernel.cu", kernel.Code),
	})
	if err != nil {
		log.Fatal(err) // a *nvjitlink.LinkError holds the log
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	mod, err := cuda.LoadModule(ctx, out.Cubin)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	_, err = mod.Func("double_all")
	if err != nil {
		log.Fatal(err)
	}
}
