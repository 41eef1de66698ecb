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

// hostDropM is the destructor of the pthread key that keeps an M bound
// to a C thread: at the thread's exit, glibc calls it with the bound M's
// g0 (in DI), and crosscall2(nil, g0, 0, 0) has runtime.cgocallback give
// the M back (runtime.dropm).
TEXT hostDropM<>(SB), NOSPLIT|NOFRAME, $0
	MOVQ DI, SI // frame: the g0
	XORL DI, DI // fn nil: drop the M
	XORL DX, DX
	XORL CX, CX
	JMP  crosscall2(SB)

GLOBL ·hostDropMABI0(SB), NOPTR|RODATA, $8
DATA ·hostDropMABI0(SB)/8, $hostDropM<>(SB)

// hostBindM(g0) is the runtime's _cgo_bindm once the key is made, called
// through asmcgocall with the C ABI (g0 in DI): it tail-calls
// pthread_setspecific(hostMKey, g0).
TEXT hostBindM<>(SB), NOSPLIT|NOFRAME, $0
	MOVQ DI, SI
	MOVQ ·hostMKey(SB), DI
	MOVQ ·pthreadSetspecific(SB), AX
	JMP  AX

GLOBL ·hostBindMABI0(SB), NOPTR|RODATA, $8
DATA ·hostBindMABI0(SB)/8, $hostBindM<>(SB)
