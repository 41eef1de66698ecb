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
// arm64 under qemu-user in CI) check this package through libcuda's call
// and callf.
package dl

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

// floatFrame is the argument block of CallFloat: the integer-class words,
// then the eight floating-point argument registers.
type floatFrame struct {
	Frame
	a [MaxArgWords]uintptr
	x [8]uint64
}
