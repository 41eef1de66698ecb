//go:build linux

#include "textflag.h"

// hostCallback is the CUhostFn the driver calls for every host function
// (AAPCS64: the user data in R0). It goes on into Go as code that cgo
// generates would: crosscall2(fn, frame, n, ctxt) saves the C callee-saved
// registers and the link register and calls runtime.cgocallback, which
// calls fn(frame) on a goroutine stack. The branch leaves the link
// register as the driver's call set it, so crosscall2 returns straight to
// the driver.
TEXT hostCallback<>(SB), NOSPLIT|NOFRAME, $0
	MOVD R0, R1                      // frame: the *hostEntry
	MOVD ·hostCallbackGoCall(SB), R0 // the func value
	MOVD (R0), R0                    // fn: hostCallbackGo's entry point
	MOVD ZR, R2                      // n (unused)
	MOVD ZR, R3                      // ctxt
	B    crosscall2(SB)

GLOBL ·hostCallbackABI0(SB), NOPTR|RODATA, $8
DATA ·hostCallbackABI0(SB)/8, $hostCallback<>(SB)

// hostDropM is the destructor of the pthread key that keeps an M bound
// to a C thread: at the thread's exit, glibc calls it with the bound M's
// g0 (in R0), and crosscall2(nil, g0, 0, 0) has runtime.cgocallback give
// the M back (runtime.dropm).
TEXT hostDropM<>(SB), NOSPLIT|NOFRAME, $0
	MOVD R0, R1 // frame: the g0
	MOVD ZR, R0 // fn nil: drop the M
	MOVD ZR, R2
	MOVD ZR, R3
	B    crosscall2(SB)

GLOBL ·hostDropMABI0(SB), NOPTR|RODATA, $8
DATA ·hostDropMABI0(SB)/8, $hostDropM<>(SB)

// hostBindM(g0) is the runtime's _cgo_bindm once the key is made, called
// through asmcgocall with the C ABI (g0 in R0): it tail-calls
// pthread_setspecific(hostMKey, g0).
TEXT hostBindM<>(SB), NOSPLIT|NOFRAME, $0
	MOVD R0, R1
	MOVD ·hostMKey(SB), R0
	MOVD ·pthreadSetspecific(SB), R9
	JMP  (R9)

GLOBL ·hostBindMABI0(SB), NOPTR|RODATA, $8
DATA ·hostBindMABI0(SB)/8, $hostBindM<>(SB)
