//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package dl

import "unsafe"

// runtime_cgocall switches to the system stack, marks the goroutine as in
// a system call and calls fn(arg) with the C calling convention. The
// argument block does not escape: it lives on the caller's stack.
//
//go:linkname runtime_cgocall runtime.cgocall
//go:noescape
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32

// Call runs the C function that f describes and stores its integer result
// in f.R. The argument words follow f in memory (see the package comment).
//
//go:nosplit
func Call(f *Frame) {
	runtime_cgocall(trampolineABI0, unsafe.Pointer(f))
}

// CallFloat is Call for a C function that takes float or double arguments
// by value. f heads a block of FloatFrame's layout: the integer-class
// argument words (MaxArgWords of them, the unused ones anywhere past f.N),
// then the eight words the trampoline loads into the floating-point
// argument registers (XMM0-XMM7 on System V AMD64, the first four on
// Windows x64, V0-V7 on arm64), a float in the low 32 bits of its word.
// The caller lays the arguments out for the system's convention (see
// FloatsPositional); tools/gen writes that layout per entry point.
//
//go:nosplit
func CallFloat(f *Frame) {
	runtime_cgocall(trampolineFloatABI0, unsafe.Pointer(f))
}
