// Package nvrtc compiles CUDA C++ to PTX or cubin at run time with NVIDIA's
// NVRTC library, which it opens the way package libcuda opens the driver:
// without cgo and without the toolkit at build time.
//
// Compile is the entry point:
//
//	out, err := nvrtc.Compile(src, nvrtc.CUBIN("sm_90"), nvrtc.NameExpressions("scale<float>"))
//	if err != nil { ... } // a *CompileError carries the log
//	name, _ := out.LoweredName("scale<float>")
//	// out.Code goes to a module loader as it is: cuda.LoadModule(ctx, out.Code)
//
// The library is found as Load says (PURECUDA_LIBNVRTC, then where a CUDA
// toolkit or NVIDIA's pip and conda packages install it) on first use.
//
// Beneath Compile is the whole C API of nvrtc.h, generated (z*.go): one
// function per entry point (nvrtcCompileProgram is CompileProgram;
// nvrtcVersion is GetVersion, as Version is Compile's companion), the
// Program handle, and Result, nvrtcResult as an error that errors.Is
// compares. Entry points are looked up by name on first use; one that the
// loaded library lacks makes its function return a *SymbolError.
//
// The package imports nothing of purecuda but its internal call path: its
// output is bytes that a module loader takes.
package nvrtc
