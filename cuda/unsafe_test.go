package cuda_test

import (
	"unsafe"

	"github.com/purecuda/purecuda/internal/kernels"
)

// The raw-libcuda side of the launch benchmark needs kernel parameter
// pointers; package cuda itself needs no unsafe from its users.
type unsafePointer = unsafe.Pointer

func ptr[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

func kernelsPTX() []byte { return kernels.PTX }
