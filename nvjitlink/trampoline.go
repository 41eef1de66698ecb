//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package nvjitlink

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// call runs the C function that f describes; the argument words follow f
// in memory (see frame).
func call(f *frame) { dl.Call((*dl.Frame)(unsafe.Pointer(f))) }
