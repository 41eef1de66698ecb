package libcuda

// frame is the head of the argument block that the assembly trampoline
// reads. The generated wrappers declare, per call, a struct that embeds frame
// and follows it with at least 8 argument words (the trampolines load all
// register arguments unconditionally): unsafe.Pointer
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

// maxArgWords is the most arguments a call can pass: 8 in registers (on
// arm64; fewer elsewhere) and up to 16 on the C stack, which the
// trampolines reserve.
const maxArgWords = 20

// floatFrame is the argument block of callf: the integer-class words, then
// the eight floating-point argument registers.
type floatFrame struct {
	frame
	a [maxArgWords]uintptr
	x [8]uint64
}
