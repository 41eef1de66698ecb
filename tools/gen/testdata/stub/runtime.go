package libcuda

// A stand-in for the hand-written runtime of package libcuda (call.go,
// proc.go, load.go) with the declarations the generated files use, so the
// generator's tests can build and run the fixture's output.

import (
	"errors"
	"sync/atomic"
)

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

// library is the open library's state; loaded (libcuda's) and lazy (the
// dl.Lazy of the other packages) say none is open, which is what
// zresult.go's Description asks.
type library struct{}

var loaded atomic.Pointer[library]

type lazyLibrary struct{}

func (lazyLibrary) Loaded() *library { return nil }

var lazy lazyLibrary
