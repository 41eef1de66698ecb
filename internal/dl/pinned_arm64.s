//go:build linux

#include "textflag.h"

// func pinnedCall(fn uintptr, frame unsafe.Pointer, stack uintptr)
//
// Calls fn (a trampoline of call_arm64.s) with frame in R0, as
// runtime.asmcgocall would, on the C stack whose top is stack. R19 keeps
// the goroutine's stack pointer and R20 the link register across the
// call: AAPCS64 has the callee preserve both (and R28, Go's g).
TEXT ·pinnedCall(SB), NOSPLIT|NOFRAME, $0-24
	MOVD fn+0(FP), R9
	MOVD frame+8(FP), R0
	MOVD stack+16(FP), R10
	MOVD RSP, R19
	MOVD R30, R20
	AND  $~15, R10
	MOVD R10, RSP
	CALL (R9)
	MOVD R19, RSP
	MOVD R20, R30
	RET
