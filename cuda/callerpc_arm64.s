#include "textflag.h"

// func callerPC() uintptr
// No frame of its own: R29 is still the caller's frame pointer, and the
// word above the saved R29 is the caller's saved link register, its return
// address.
TEXT ·callerPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVD 8(R29), R0
	MOVD R0, ret+0(FP)
	RET

// func curG() uintptr
// g is the register that holds the running goroutine's record.
TEXT ·curG(SB), NOSPLIT|NOFRAME, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
