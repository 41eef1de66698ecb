package libcuda

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// frame is the head of the argument block that the assembly trampoline
// (package internal/dl) reads. The generated wrappers declare, per call, a
// struct that embeds frame and follows it with at least 8 argument words
// (the trampolines load all register arguments unconditionally):
// unsafe.Pointer fields for pointer arguments and uintptr fields for
// everything else. Keeping Go pointers in pointer-typed fields of a stack
// object means the garbage collector sees them and a stack copy before the
// call adjusts them; during the call the goroutine's stack cannot move (it
// is in a system call), so the C side sees stable addresses.
//
// frame has dl.Frame's layout (checked below); its fields are unexported so
// that the generated code reads the same in every package.
type frame struct {
	fn uintptr // address of the C function
	r  uintptr // the integer return register after the call
	n  uintptr // number of argument words that follow this head
}

// The compiler refuses these lines if frame and dl.Frame differ.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(frame{})-unsafe.Sizeof(dl.Frame{})]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.fn)-unsafe.Offsetof(dl.Frame{}.Fn)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.r)-unsafe.Offsetof(dl.Frame{}.R)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.n)-unsafe.Offsetof(dl.Frame{}.N)]
)

// maxArgWords is the most arguments a call can pass (see dl.MaxArgWords).
const maxArgWords = dl.MaxArgWords
