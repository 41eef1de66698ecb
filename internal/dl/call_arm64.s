//go:build linux

#include "textflag.h"

// The trampolines are entered from runtime.asmcgocall on the system stack
// with the AAPCS64 calling convention: the argument block (see Frame in
// dl.go) arrives in R0. They load X0-X7, copy further words onto the C
// stack, call Frame.Fn, and store X0 into Frame.R.

#define F_FN 0
#define F_R 8
#define F_N 16
#define F_A 24
#define F_X (F_A+28*8)

// 24 stack words, FP and LR, the block's address and padding.
#define LOCALS (24*8+32)
#define SAVEFP (24*8)
#define SAVED (24*8+16)

GLOBL ·trampolineABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineABI0(SB)/8, $trampoline<>(SB)

GLOBL ·trampolineFloatABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineFloatABI0(SB)/8, $trampolineFloat<>(SB)

TEXT trampolineFloat<>(SB), NOSPLIT|NOFRAME, $0
	FMOVD (F_X+0)(R0), F0
	FMOVD (F_X+8)(R0), F1
	FMOVD (F_X+16)(R0), F2
	FMOVD (F_X+24)(R0), F3
	FMOVD (F_X+32)(R0), F4
	FMOVD (F_X+40)(R0), F5
	FMOVD (F_X+48)(R0), F6
	FMOVD (F_X+56)(R0), F7
	JMP   trampoline<>(SB)

TEXT trampoline<>(SB), NOSPLIT|NOFRAME, $0
	SUB  $LOCALS, RSP
	STP  (R29, R30), SAVEFP(RSP)
	MOVD R0, SAVED(RSP)
	MOVD R0, R9

	// Copy the words past the eight register arguments to the stack.
	MOVD F_N(R9), R10
	SUBS $8, R10, R10
	BLE  regs
	ADD  $(F_A+8*8), R9, R11
	MOVD RSP, R12

copy:
	MOVD.P 8(R11), R13
	MOVD.P R13, 8(R12)
	SUBS   $1, R10, R10
	BNE    copy

regs:
	MOVD (F_A+0)(R9), R0
	MOVD (F_A+8)(R9), R1
	MOVD (F_A+16)(R9), R2
	MOVD (F_A+24)(R9), R3
	MOVD (F_A+32)(R9), R4
	MOVD (F_A+40)(R9), R5
	MOVD (F_A+48)(R9), R6
	MOVD (F_A+56)(R9), R7
	MOVD F_FN(R9), R10
	CALL (R10)

	MOVD SAVED(RSP), R9
	MOVD R0, F_R(R9)
	LDP  SAVEFP(RSP), (R29, R30)
	ADD  $LOCALS, RSP
	RET
