//go:build linux || windows

#include "textflag.h"

// The trampolines are entered from runtime.asmcgocall on the system stack
// with the C calling convention: the argument block (see Frame in dl.go)
// arrives in DI (System V) or CX (Windows x64). They copy the argument words
// into registers and onto the C stack, call Frame.Fn, and store the integer
// return register into Frame.R.

#define F_FN 0
#define F_R 8
#define F_N 16
#define F_A 24
// floatFrame.x follows the MaxArgWords (28) argument words.
#define F_X (F_A+28*8)

#ifdef GOOS_windows
#define NREG 4
#define SHADOW 32
#else
#define NREG 6
#define SHADOW 0
#endif

// Stack arguments (at most 24 words), the Windows home area, and a slot
// that keeps the block's address across the call.
#define LOCALS (SHADOW+24*8+16)
#define SAVED (SHADOW+24*8)

GLOBL ·trampolineABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineABI0(SB)/8, $trampoline<>(SB)

GLOBL ·trampolineFloatABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineFloatABI0(SB)/8, $trampolineFloat<>(SB)

TEXT trampolineFloat<>(SB), NOSPLIT|NOFRAME, $0
#ifdef GOOS_windows
	MOVQ (F_X+0)(CX), X0
	MOVQ (F_X+8)(CX), X1
	MOVQ (F_X+16)(CX), X2
	MOVQ (F_X+24)(CX), X3
#else
	MOVQ (F_X+0)(DI), X0
	MOVQ (F_X+8)(DI), X1
	MOVQ (F_X+16)(DI), X2
	MOVQ (F_X+24)(DI), X3
	MOVQ (F_X+32)(DI), X4
	MOVQ (F_X+40)(DI), X5
	MOVQ (F_X+48)(DI), X6
	MOVQ (F_X+56)(DI), X7
#endif
	JMP trampoline<>(SB)

TEXT trampoline<>(SB), NOSPLIT|NOFRAME, $0
	// Own frame, aligned for the callee whatever the caller's alignment.
	PUSHQ BP
	MOVQ  SP, BP
	SUBQ  $LOCALS, SP
	ANDQ  $~15, SP

#ifdef GOOS_windows
	MOVQ CX, R11
#else
	MOVQ DI, R11
#endif
	MOVQ R11, SAVED(SP)

	// Copy the words past the register arguments to the outgoing area.
	MOVQ F_N(R11), R10
	SUBQ $NREG, R10
	JLE  regs
	LEAQ (F_A+NREG*8)(R11), AX
	LEAQ SHADOW(SP), DX

copy:
	MOVQ (AX), R8
	MOVQ R8, (DX)
	ADDQ $8, AX
	ADDQ $8, DX
	DECQ R10
	JNZ  copy

regs:
#ifdef GOOS_windows
	MOVQ (F_A+0)(R11), CX
	MOVQ (F_A+8)(R11), DX
	MOVQ (F_A+16)(R11), R8
	MOVQ (F_A+24)(R11), R9
#else
	MOVQ (F_A+0)(R11), DI
	MOVQ (F_A+8)(R11), SI
	MOVQ (F_A+16)(R11), DX
	MOVQ (F_A+24)(R11), CX
	MOVQ (F_A+32)(R11), R8
	MOVQ (F_A+40)(R11), R9
	MOVL $8, AX // upper bound of vector registers used, for variadic callees
#endif
	MOVQ F_FN(R11), R10
	CALL R10

	MOVQ SAVED(SP), R11
	MOVQ AX, F_R(R11)

	MOVQ BP, SP
	POPQ BP
	RET
