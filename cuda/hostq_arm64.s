//go:build linux

#include "textflag.h"

#define SYS_futex 98
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

// The record and the protocol are hostq_amd64.s's. AAPCS64: the user data
// in R0; only R0-R9 are used, which a C caller does not expect kept. The
// stack stays 16-byte aligned.
TEXT hostQueueCallback<>(SB), NOSPLIT|NOFRAME, $0
	SUB  $32, RSP
	MOVD R0, 8(RSP)
	MOVW ZR, 16(RSP)
	MOVD RSP, R8                   // rec
	ADD  $16, R8, R6               // &rec.state
	MOVD $·hostQPosted(SB), R2

posted:
	LDAXR (R2), R3
	ADD   $1, R3
	STLXR R3, (R2), R4
	CBNZ  R4, posted
	MOVD  $·hostQHead(SB), R2

push:
	LDAR  (R2), R3
	MOVD  R3, 0(RSP)
	LDAXR (R2), R5
	CMP   R3, R5
	BNE   push
	STLXR R8, (R2), R4
	CBNZ  R4, push
	MOVD  $·hostQSeq(SB), R2

seq:
	LDAXRW (R2), R3
	ADDW   $1, R3
	STLXRW R3, (R2), R4
	CBNZW  R4, seq
	MOVD   ZR, R9                  // 1 once this call has woken the dispatcher
	MOVD   $·hostQSleeping(SB), R3
	LDARW  (R3), R3
	CBZW   R3, spin
	MOVD   R2, R0
	MOVD   $FUTEX_WAKE_PRIVATE, R1
	MOVD   $1, R2
	MOVD   $SYS_futex, R8
	SVC
	MOVD   $1, R9
	MOVD   $·hostQWakes(SB), R2

wakes:
	LDAXR (R2), R3
	ADD   $1, R3
	STLXR R3, (R2), R4
	CBNZ  R4, wakes

spin:
	MOVD  $·hostQSpin(SB), R5
	MOVWU (R5), R5

spinloop:
	LDARW (R6), R3
	CMPW  $2, R3
	BEQ   done
	CBZW  R5, sleep
	WORD  $0xd5033fdf              // ISB SY: a short pause
	SUBW  $1, R5
	B     spinloop

sleep:
	LDAXRW (R6), R3
	CBNZW  R3, done                // the state was 2
	MOVW   $1, R3
	STLXRW R3, (R6), R4
	CBNZW  R4, sleep
	MOVD   $·hostQSlept(SB), R2

slept:
	LDAXR (R2), R3
	ADD   $1, R3
	STLXR R3, (R2), R4
	CBNZ  R4, slept
	CBZ   R9, wait
	MOVD  $·hostQWakeSlept(SB), R2

wakeslept:
	LDAXR (R2), R3
	ADD   $1, R3
	STLXR R3, (R2), R4
	CBNZ  R4, wakeslept

wait:
	MOVD R6, R0
	MOVD $FUTEX_WAIT_PRIVATE, R1
	MOVD $1, R2
	MOVD ZR, R3                    // no timeout
	MOVD $SYS_futex, R8
	SVC
	LDARW (R6), R3
	CMPW  $2, R3
	BNE   wait

done:
	ADD $32, RSP
	RET

GLOBL ·hostQueueCallbackABI0(SB), NOPTR|RODATA, $8
DATA ·hostQueueCallbackABI0(SB)/8, $hostQueueCallback<>(SB)

// func hostQEntry(rec uintptr) *hostEntry
TEXT ·hostQEntry(SB), NOSPLIT, $0-16
	MOVD rec+0(FP), R0
	MOVD 8(R0), R1
	MOVD R1, ret+8(FP)
	RET

// func hostQNext(rec uintptr) uintptr
TEXT ·hostQNext(SB), NOSPLIT, $0-16
	MOVD rec+0(FP), R0
	MOVD 0(R0), R1
	MOVD R1, ret+8(FP)
	RET

// func hostQDone(rec uintptr) (slept bool)
TEXT ·hostQDone(SB), NOSPLIT, $0-9
	MOVD rec+0(FP), R0
	ADD  $16, R0, R0
	MOVW $2, R1

xchg:
	LDAXRW (R0), R2
	STLXRW R1, (R0), R3
	CBNZW  R3, xchg
	CMPW   $1, R2
	CSET   EQ, R2
	MOVB   R2, slept+8(FP)
	RET
