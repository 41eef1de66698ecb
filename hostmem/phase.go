package hostmem

import (
	"fmt"
	"log/slog"
)

// phase is where a buffer's memory is in its release, one state machine
// for the buffer and the registrations under it:
//
//	wrapped ──Use──▶ inUse ──Free──▶ freed ──owner──▶ waiting ──GPU done──▶ retired
//	   └────────────Free──────────────┘                  │                      │
//	                                                     └──failure──▶ failed   │
//	retired (registration unused) ──batch──▶ unregistering ──▶ gone
//	                                              └──failure──▶ failed (kept pinned)
//
// A buffer's state goes from wrapped to retired (or failed); then the
// state is reused for another buffer. A registration is retired when no
// buffer, release or lease holds it, unregistering while a batch ends it,
// and gone once ended; a retired one is revived (back in use) by a wrap of
// its memory. Failed is final: the memory stays registered and pinned.
//
// Buffer methods move a state from wrapped to freed under the state's
// lock; every later move is the owner goroutine's (owner.go).
type phase uint8

const (
	phaseWrapped phase = iota
	phaseInUse
	phaseFreed
	phaseWaiting
	phaseRetired
	phaseUnregistering
	phaseGone
	phaseFailed
)

var phaseNames = [...]string{"wrapped", "in use", "freed", "waiting for the GPU", "retired", "unregistering", "gone", "failed"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// next lists the moves the machine allows.
var moves = [...][]phase{
	phaseWrapped:       {phaseInUse, phaseFreed},
	phaseInUse:         {phaseFreed, phaseRetired}, // retired: a registration no longer used
	phaseFreed:         {phaseWaiting, phaseRetired, phaseFailed},
	phaseWaiting:       {phaseRetired, phaseFailed},
	phaseRetired:       {phaseInUse, phaseUnregistering},
	phaseUnregistering: {phaseGone, phaseFailed},
	phaseGone:          nil,
	phaseFailed:        nil,
}

// move changes *p to to when the machine allows it; otherwise it logs the
// broken invariant (a bug of this package), leaves *p as it is and
// returns false.
func move(p *phase, to phase) bool {
	for _, ok := range moves[*p] {
		if ok == to {
			*p = to
			return true
		}
	}
	slog.Error("hostmem: internal error: release state machine", "from", p.String(), "to", to.String())
	return false
}
