// Package dl calls C functions of libraries opened at run time (through
// purego's dlopen or Windows' LoadLibrary) without cgo and without
// allocating: an assembly trampoline entered through runtime.cgocall reads
// an argument block that the caller keeps on its own stack.
//
// It also finds and opens those libraries, one mechanism for all (Spec,
// Open, Lazy; library.go, places.go): tools/gen's library table is written
// into zlibraries.go (Libraries), and each bound package's generated
// zload.go loads its row.
//
// Every generated package shares it (libcuda, nvrtc, nvjitlink, nvml,
// cublas, cublaslt). Their generated wrappers declare, per call, a struct
// that begins with a block of Frame's layout (each package's own frame
// type, in its generated zproc.go, so that the generated code reads the
// same everywhere) and follows it with at least 8 argument words (the trampolines load all
// register arguments unconditionally): unsafe.Pointer fields for pointer
// arguments and uintptr fields for everything else.
// Keeping Go pointers in pointer-typed fields of a stack object means the
// garbage collector sees them and a stack copy before the call adjusts
// them; during the call the goroutine's stack cannot move (it is in a
// system call), so the C side sees stable addresses.
//
// Call and CallFloat exist on linux/amd64, linux/arm64 and windows/amd64,
// the systems NVIDIA ships CUDA for; elsewhere a package keeps a stub of
// its own, never reached because no library can be opened there.
//
// libcuda's call tests (libcuda/call_test.go, against a C fixture; run for
// arm64 under qemu-user in CI) check Call through libcuda's call;
// internal/calltest's check CallFloat through wrappers that tools/gen
// writes, on the three systems (arm64 under qemu-user, Windows under Wine).
package dl

import (
	"runtime"
	"unsafe"
)

// Frame is the head of the argument block that the trampoline reads.
type Frame struct {
	Fn uintptr // address of the C function
	R  uintptr // the integer return register after the call
	N  uintptr // number of argument words that follow this head
}

// MaxArgWords is the most arguments a call can pass: 8 in registers (on
// arm64; 6 on System V AMD64, 4 on Windows x64) and up to 24 on the C
// stack, which the trampolines reserve. cuBLAS's widest entry point
// (cublasGemmStridedBatchedEx_64) takes 23.
const MaxArgWords = 28

// FloatFrame is the layout of CallFloat's argument block: the head, the
// integer-class words, then the floating-point register words. Callers
// declare their own struct of this layout, with pointer-typed fields where
// pointers travel (see Call's rules); FloatXOffset is where X begins.
type FloatFrame struct {
	Frame
	A [MaxArgWords]uintptr
	X [8]uint64
}

// FloatXOffset is the offset of FloatFrame.X in the block (the trampolines'
// F_X).
const FloatXOffset = 24 + MaxArgWords*8

// FloatsPositional reports the convention CallFloat's block follows on
// this system. On Windows x64 the arguments are positional: argument i is
// word i of A whatever its type, and a float or double among the first four
// is also X[i] (the callee reads XMM i; a variadic callee would read the
// integer register). On System V AMD64 and AAPCS64 the two classes count
// separately: the floats and doubles fill X in order, the other arguments
// fill A in order, and a float past the eighth takes the next word of A
// (the stack), as in C.
const FloatsPositional = runtime.GOOS == "windows"

// The compiler refuses this line if FloatXOffset is not X's offset.
var _ = [1]struct{}{}[unsafe.Offsetof(FloatFrame{}.X)-FloatXOffset]
