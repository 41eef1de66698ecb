package libcuda

// A stand-in for the hand-written runtime of the generated packages
// (proc.go, and what internal/dl and the generated zload.go, zproc.go and
// zcall*.go give) with the declarations the generated files use, so the
// generator's tests can build and run the fixture's output; proc.go is
// libcuda's proc (the other packages' is generated, zproc.go).

import "sync/atomic"

type frame struct {
	fn uintptr
	r  uintptr
	n  uintptr
}

func call(f *frame) { f.r = 0 }

func callPinned(f *frame) { f.r = 0 }

func callQueued(f *frame) { f.r = 0 }

func callFence(f *frame) { f.r = 0 }

func callFloat(f *frame) { f.r = 0 }

// library is the open library's state; loaded (libcuda's) and lazy (the
// dl.Lazy of the other packages) say none is open, which is what
// zresult.go's Description asks.
type library struct{}

var loaded atomic.Pointer[library]

type lazyLibrary struct{}

func (lazyLibrary) Loaded() *library { return nil }

func (lazyLibrary) Resolve(addr *uintptr, symbol string) (uintptr, error) { return 1, nil }

var lazy lazyLibrary
