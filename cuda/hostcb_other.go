//go:build !linux || !(amd64 || arm64)

package cuda

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// newHostCallback returns the C-callable host function: purego's
// callback, made once (purego can make only a few in a program's life).
// purego calls the Go function through reflection, which allocates.
func newHostCallback() uintptr {
	return purego.NewCallback(func(user unsafe.Pointer) uintptr {
		hostTrampoline((*hostEntry)(user))
		return 0
	})
}
