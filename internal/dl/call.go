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

// CallFloat calls a C function that takes float or double arguments by
// value. args holds every argument in C order as a 64-bit word (floats as
// math.Float32bits, doubles as math.Float64bits); bit i of floats or
// doubles marks argument i as such. Only functions without pointer
// arguments use it, so the words need no pointer tracking.
func CallFloat(fn uintptr, floats, doubles uint32, args ...uint64) uintptr {
	var f floatFrame
	f.Fn = fn
	packFloatArgs(&f, floats|doubles, args)
	runtime_cgocall(trampolineFloatABI0, unsafe.Pointer(&f))
	return f.R
}
