//go:build linux

#include "textflag.h"

// hostCallback is the CUhostFn the driver calls for every host function
// (System V ABI: the user data in DI). It goes on into Go as code that cgo
// generates would: crosscall2(fn, frame, n, ctxt) saves the C callee-saved
// registers and calls runtime.cgocallback, which calls fn(frame) on a
// goroutine stack. The jump leaves the stack as the driver's call made it,
// so crosscall2 returns straight to the driver.
TEXT hostCallback<>(SB), NOSPLIT|NOFRAME, $0
	MOVQ DI, SI                      // frame: the *hostEntry
	MOVQ ·hostCallbackGoCall(SB), DI // the func value
	MOVQ (DI), DI                    // fn: hostCallbackGo's entry point
	XORL DX, DX                      // n (unused)
	XORL CX, CX                      // ctxt
	JMP  crosscall2(SB)

GLOBL ·hostCallbackABI0(SB), NOPTR|RODATA, $8
DATA ·hostCallbackABI0(SB)/8, $hostCallback<>(SB)
