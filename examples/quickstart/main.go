// Command quickstart is the README's quickstart, as it stands there (the
// examples test checks that the README holds this file): saxpy compiled
// from a Go string by NVRTC, run with package cuda.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/nvrtc"
)

// saxpy is y = a*x + y. C++ linkage: Module.Func finds it by its C++ name
// and Launch checks the arguments against (int, float, const float*, float*).
const saxpySource = `
__global__ void saxpy(int n, float a, const float *x, float *y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`

func main() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	arch, err := devs[0].Arch() // "sm_90" on an H100 or H200
	if err != nil {
		log.Fatal(err)
	}
	out, err := nvrtc.Compile(saxpySource, nvrtc.CUBIN(arch)) // a *nvrtc.CompileError holds the log
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context() // the primary context, retained
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	mod, err := cuda.LoadModule(ctx, out.Code) // PTX, cubin or fatbin
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	saxpy, err := mod.Func("saxpy") // the C++ name; or the mangled _Z5saxpyifPKfPf
	if err != nil {
		log.Fatal(err)
	}

	const n = 1 << 20
	hostX, hostY := make([]float32, n), make([]float32, n)
	for i := range hostX {
		hostX[i], hostY[i] = float32(i), 1
	}
	x, err := cuda.Alloc[float32](s, n) // stream-ordered device memory
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free() // after the work of every stream that used x
	y, err := cuda.Alloc[float32](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	if err := cuda.CopyToDevice(s, x, hostX); err != nil { // lengths checked
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, y, hostY); err != nil {
		log.Fatal(err)
	}
	err = s.Launch(saxpy, cuda.Grid((n+255)/256, 1, 1), cuda.Block(256, 1, 1),
		cuda.Int32(n), cuda.Float32(2), x.Arg(), y.Arg()) // checked by type: Int32 for int, a []float32 Slice for float*
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, hostY, y); err != nil { // into a []float32: returns with the data
		log.Fatal(err)
	}
	fmt.Println(hostY[:4]) // [1 3 5 7]
}
