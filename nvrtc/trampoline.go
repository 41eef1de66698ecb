//go:build (linux && (amd64 || arm64)) || (windows && amd64)

package nvrtc

import "github.com/purecuda/purecuda/internal/dl"

// call runs the C function that f describes; the argument words follow f
// in memory.
func call(f *frame) { dl.Call(f) }
