// Package nvjitlink links GPU code with NVIDIA's nvJitLink library:
// PTX, cubins, fat binaries and LTO-IR (the link-time-optimisable code
// that nvrtc.LTOIR and nvcc -dlto make, which the driver's own linker,
// cuda.Linker, cannot take since CUDA 12) into one cubin that
// cuda.LoadModule loads:
//
//	ir, err := nvrtc.Compile(src, nvrtc.LTOIR("compute_90"))
//	out, err := nvjitlink.Link("sm_90", []nvjitlink.Input{nvjitlink.LTOIR("k.cu", ir.Code)})
//	mod, err := cuda.LoadModule(ctx, out.Cubin)
//
// Options are typed values (Optimize(3), LineInfo(), MaxRegisters(64),
// Flag for one not covered); PTXOutput makes the link give the linked PTX
// (Output.PTX) instead of a cubin. A failed link is a *LinkError with
// nvJitLink's error log.
//
// The bindings (zapi.go, zconst.go, zresult.go, ztypes.go) are generated from
// nvJitLink.h by tools/gen: every entry point, under the name of its
// static inline wrapper (Create for __nvJitLinkCreate_13_0), returning a
// Result as an error. The library (libnvJitLink.so.13, nvJitLink_130_0.dll)
// is opened at run time on first use, as Load describes; a symbol it lacks
// is a *SymbolError from that function alone. Nothing here needs a GPU or a
// driver: a link runs on the CPU.
package nvjitlink
