//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package libcuda

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// call runs the C function that f describes; the argument words follow f
// in memory (see frame).
func call(f *frame) { dl.Call((*dl.Frame)(unsafe.Pointer(f))) }

// callf calls a C function that takes float or double arguments by value
// (see dl.CallFloat).
func callf(fn uintptr, floats, doubles uint32, args ...uint64) uintptr {
	return dl.CallFloat(fn, floats, doubles, args...)
}
