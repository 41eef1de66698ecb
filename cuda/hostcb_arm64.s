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
