#include "textflag.h"

// func callerPC() uintptr
// No frame of its own: BP is still the caller's frame pointer, and the
// word above the saved BP is the caller's return address.
TEXT ·callerPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ 8(BP), AX
	MOVQ AX, ret+0(FP)
	RET

// func curG() uintptr
// The assembler turns (TLS) into the thread's g slot on every OS.
TEXT ·curG(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
