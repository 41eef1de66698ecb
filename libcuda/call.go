package libcuda

// frame is the head of the argument block that the assembly trampoline
// reads. The generated wrappers declare, per call, a struct that embeds frame
// and follows it with at least minArgWords argument words: unsafe.Pointer
// fields for pointer arguments and uintptr fields for everything else.
// Keeping Go pointers in pointer-typed fields of a stack object means the
// garbage collector sees them and a stack copy before the call adjusts them;
// during the call the goroutine's stack cannot move (it is in a system
// call), so the C side sees stable addresses.
type frame struct {
	fn uintptr // address of the C function
	r  uintptr // the integer return register after the call
	n  uintptr // number of argument words that follow this head
}

const (
	// minArgWords is the number of argument words every block carries, so
	// the trampoline can load all register arguments unconditionally.
	minArgWords = 8
	// maxArgWords is the most arguments a call can pass: the register
	// arguments plus 16 words on the C stack.
	maxArgWords = 20
)

// floatFrame is the argument block of callf: the integer-class words, then
// the eight floating-point argument registers.
type floatFrame struct {
	frame
	a [maxArgWords]uintptr
	x [8]uint64
}
