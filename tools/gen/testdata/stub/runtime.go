package libcuda

// A stand-in for the hand-written runtime of package libcuda (call.go,
// proc.go) with the declarations the generated files use, so the
// generator's tests can build and run the fixture's output.

import "errors"

type frame struct {
	fn uintptr
	r  uintptr
	n  uintptr
}

func call(f *frame) { f.r = 0 }

func callf(fn uintptr, floats, doubles uint32, args ...uint64) uintptr { return 0 }

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
