//go:build linux

#include "textflag.h"

#define SYS_futex 202
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

// A host call record lives on the driver thread's stack while the thread
// waits for its host function (see hostq.go):
//	0(rec)  next    the record posted before it, 0 for none
//	8(rec)  entry   the driver's user data, a *hostEntry
//	16(rec) state   0 posted, 1 the driver's thread sleeps on it, 2 done

// hostQueueCallback is the CUhostFn of HostFunc (System V ABI: the user
// data in DI). It never enters Go: it pushes a record onto hostQHead,
// bumps hostQSeq and wakes the dispatcher if it sleeps, then waits for the
// record's state to become 2, checking hostQSpin times before it sleeps on
// a futex. It uses only registers that a C caller does not expect kept.
TEXT hostQueueCallback<>(SB), NOSPLIT|NOFRAME, $0
	SUBQ $32, SP
	MOVQ DI, 8(SP)
	MOVL $0, 16(SP)
	MOVQ SP, R8
	LOCK
	INCQ ·hostQPosted(SB)

push:
	MOVQ ·hostQHead(SB), AX
	MOVQ AX, 0(SP)
	LOCK
	CMPXCHGQ R8, ·hostQHead(SB)
	JNE  push
	MOVL $1, AX
	LOCK
	XADDL AX, ·hostQSeq(SB)
	XORL R9, R9                    // 1 once this call has woken the dispatcher
	MOVL ·hostQSleeping(SB), AX
	TESTL AX, AX
	JZ   spin
	LEAQ ·hostQSeq(SB), DI
	MOVL $FUTEX_WAKE_PRIVATE, SI
	MOVL $1, DX
	MOVL $SYS_futex, AX
	SYSCALL
	MOVL $1, R9
	LOCK
	INCQ ·hostQWakes(SB)

spin:
	MOVL ·hostQSpin(SB), CX

spinloop:
	CMPL 16(SP), $2
	JEQ  done
	TESTL CX, CX
	JZ   sleep
	PAUSE
	DECL CX
	JMP  spinloop

sleep:
	MOVL $0, AX
	MOVL $1, DX
	LOCK
	CMPXCHGL DX, 16(SP)
	JNE  done                      // the state was 2
	LOCK
	INCQ ·hostQSlept(SB)
	TESTL R9, R9
	JZ   wait
	LOCK
	INCQ ·hostQWakeSlept(SB)

wait:
	LEAQ 16(SP), DI
	MOVL $FUTEX_WAIT_PRIVATE, SI
	MOVL $1, DX
	XORL R10, R10                  // no timeout
	MOVL $SYS_futex, AX
	SYSCALL
	CMPL 16(SP), $2
	JNE  wait

done:
	ADDQ $32, SP
	RET

GLOBL ·hostQueueCallbackABI0(SB), NOPTR|RODATA, $8
DATA ·hostQueueCallbackABI0(SB)/8, $hostQueueCallback<>(SB)

// func hostQEntry(rec uintptr) *hostEntry
TEXT ·hostQEntry(SB), NOSPLIT, $0-16
	MOVQ rec+0(FP), BX
	MOVQ 8(BX), AX
	MOVQ AX, ret+8(FP)
	RET

// func hostQNext(rec uintptr) uintptr
TEXT ·hostQNext(SB), NOSPLIT, $0-16
	MOVQ rec+0(FP), BX
	MOVQ 0(BX), AX
	MOVQ AX, ret+8(FP)
	RET

// func hostQDone(rec uintptr) (slept bool)
TEXT ·hostQDone(SB), NOSPLIT, $0-9
	MOVQ rec+0(FP), BX
	MOVL $2, AX
	XCHGL AX, 16(BX)
	CMPL AX, $1
	SETEQ slept+8(FP)
	RET
