package nvjitlink

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/dl"
)

// frame is the head of the argument block of a nvJitLink call: the generated
// wrappers declare, per call, a struct that embeds it and follows it with
// the argument words, on their own stack (see package internal/dl). It has
// dl.Frame's layout (checked below).
type frame struct {
	fn uintptr // address of the C function
	r  uintptr // the integer return register after the call
	n  uintptr // number of argument words that follow this head
}

// The compiler refuses these lines if frame and dl.Frame differ.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(frame{})-unsafe.Sizeof(dl.Frame{})]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.fn)-unsafe.Offsetof(dl.Frame{}.Fn)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.r)-unsafe.Offsetof(dl.Frame{}.R)]
	_ = [1]struct{}{}[unsafe.Offsetof(frame{}.n)-unsafe.Offsetof(dl.Frame{}.N)]
)
