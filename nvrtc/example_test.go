package nvrtc_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/purecuda/purecuda/nvrtc"
)

// A kernel compiled to PTX for NVRTC's default architecture; Code goes to
// a module loader as it is. (No Output: CI has no NVRTC.)
func ExampleCompile() {
	const src = `extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`
	out, err := nvrtc.Compile(src, nvrtc.Flags("-std=c++17"))
	var ce *nvrtc.CompileError
	switch {
	case errors.As(err, &ce):
		log.Fatalf("the source does not compile:\n%s", ce.Log)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(len(out.PTX()) > 0)
}

// A template instantiated by a name expression and compiled to a cubin for
// sm_90; LoweredName gives the name a module's function lookup takes.
func ExampleNameExpressions() {
	const src = `template <typename T> __global__ void scale(T *v, T by, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) v[i] *= by;
}`
	out, err := nvrtc.Compile(src, nvrtc.CUBIN("sm_90"), nvrtc.NameExpressions("scale<float>"))
	if err != nil {
		log.Fatal(err)
	}
	name, err := out.LoweredName("scale<float>")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(name)
}
