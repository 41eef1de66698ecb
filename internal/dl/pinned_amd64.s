//go:build linux

#include "textflag.h"

// func pinnedCall(fn uintptr, frame unsafe.Pointer, stack uintptr)
//
// Calls fn (a trampoline of call_amd64.s) with frame in DI, as
// runtime.asmcgocall would, on the C stack whose top is stack. BX keeps
// the goroutine's stack pointer across the call: the System V convention
// has the callee preserve it (and R14, Go's g). The caller's ABI wrapper
// restores Go's fixed registers (X15) after the return.
TEXT ·pinnedCall(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ fn+0(FP), AX
	MOVQ frame+8(FP), DI
	MOVQ stack+16(FP), DX
	MOVQ SP, BX
	ANDQ $~15, DX
	MOVQ DX, SP
	CALL AX
	MOVQ BX, SP
	RET
