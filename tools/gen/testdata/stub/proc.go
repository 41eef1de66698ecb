package libcuda

import "errors"

// A stand-in for libcuda's hand-written proc (libcuda/proc.go).

type proc struct {
	addr    uintptr
	name    string
	symbol  string
	version int32
}

func (p *proc) fn() (uintptr, error) { return 1, nil }

func (p *proc) result(r uintptr) error {
	if r != 0 {
		return errors.New(p.symbol)
	}
	return nil
}
