package cuda

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

var (
	// ErrClosed is matched (errors.Is) by the error of a call on a Context,
	// Stream, Event or Module after its Close, or on a Func of a closed
	// Module.
	ErrClosed = errors.New("cuda: already closed")
	// ErrFreed is matched by the error of a use of a Slice, or of a
	// hostmem.Buffer passed as a host side or kernel argument, after Free.
	ErrFreed = errors.New("cuda: memory already freed")
	// ErrNil is matched by the error of a call on a nil or zero value: a
	// nil *Stream, a zero Slice, a nil *Func.
	ErrNil = errors.New("cuda: nil value")
	// ErrLength is matched by the error of a copy between sides of
	// different lengths, and of an out-of-range Slice.
	ErrLength = errors.New("cuda: length mismatch or out of range")
	// ErrArgs is matched by the error of a launch whose arguments do not
	// match the kernel's parameters.
	ErrArgs = errors.New("cuda: kernel arguments do not match the parameters")
	// ErrNotFound is matched by the error of Module.Func when no function
	// of the module has the name.
	ErrNotFound = errors.New("cuda: no such function")
	// ErrAmbiguous is matched by the error of Module.Func when the name
	// matches several functions (overloads or template instances).
	ErrAmbiguous = errors.New("cuda: ambiguous function name")
	// ErrElemType is matched by the error of Alloc, AllocPinned, Pin and
	// Value for a type that holds Go pointers or has no size.
	ErrElemType = errors.New("cuda: type cannot be used on the device")
	// ErrCapturing is matched by the error of Stream.Close and AllocFrom on
	// a stream that is being captured (see Stream.Capture).
	ErrCapturing = errors.New("cuda: stream is being captured")
	// ErrHostFunc is matched by the error of Stream.Sync after a host
	// function of the stream panicked or called runtime.Goexit (see
	// Stream.HostFunc and HostFuncError).
	ErrHostFunc = errors.New("cuda: a host function failed")
)

// The driver's errors that programs most often test for, matched with
// errors.Is by the error of any call that the driver failed with them
// (they are the libcuda.Result values themselves). None of them is sticky:
// the context stays usable after them. The sticky ones, after which the
// context is lost (an illegal address, a kernel's trap), are in the
// package's diagnostics.
var (
	// ErrOutOfMemory: the device, or a memory pool, has not enough memory
	// left (CUDA_ERROR_OUT_OF_MEMORY).
	ErrOutOfMemory error = libcuda.CUDA_ERROR_OUT_OF_MEMORY
	// ErrInvalidValue: the driver refused an argument
	// (CUDA_ERROR_INVALID_VALUE).
	ErrInvalidValue error = libcuda.CUDA_ERROR_INVALID_VALUE
	// ErrNotReady: work queried is still running (CUDA_ERROR_NOT_READY);
	// Stream.Query and Event.Query answer it as false instead.
	ErrNotReady error = libcuda.CUDA_ERROR_NOT_READY
	// ErrNotSupported: the device or driver does not support the operation
	// (CUDA_ERROR_NOT_SUPPORTED).
	ErrNotSupported error = libcuda.CUDA_ERROR_NOT_SUPPORTED
	// ErrPeerAccessUnsupported: the two devices cannot access each other's
	// memory (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED).
	ErrPeerAccessUnsupported error = libcuda.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
	// ErrCaptureUnsupported: a call not allowed while a capture is open,
	// which invalidated the capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
	ErrCaptureUnsupported error = libcuda.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	// ErrCaptureInvalidated: the capture was invalidated by such a call
	// and made no graph (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); the error
	// of Stream.Capture for it matches this.
	ErrCaptureInvalidated error = libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
	// ErrCaptureIsolation: a capturing stream was made to wait for an
	// event recorded outside its capture
	// (CUDA_ERROR_STREAM_CAPTURE_ISOLATION).
	ErrCaptureIsolation error = libcuda.CUDA_ERROR_STREAM_CAPTURE_ISOLATION
	// ErrCaptureUnjoined: a stream that joined a capture (by waiting for
	// an event recorded in it) was not joined back into the capturing
	// stream before the capture ended (CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
	ErrCaptureUnjoined error = libcuda.CUDA_ERROR_STREAM_CAPTURE_UNJOINED
)

// driverErr names the driver call that failed, as dl.Failed does for
// package cuda ("cuda: cuX: ..."); errors.Is matches err, and so the
// libcuda.Result it wraps.
//
// A *LostError (the context is lost, see ErrContextLost) comes back as it
// is: the first call that met it names it.
func driverErr(call string, err error) error {
	if l, ok := err.(*LostError); ok {
		l.name(call)
		return l
	}
	return dl.Failed("cuda", call, err)
}

// closedErr says which kind of value was used after Close.
func closedErr(what, op string) error {
	return fmt.Errorf("cuda: %s.%s: %w", what, op, ErrClosed)
}

// nilErr says which kind of value was nil.
func nilErr(what, op string) error {
	return fmt.Errorf("cuda: %s.%s on a nil %s: %w", what, op, what, ErrNil)
}

// logErr logs a failure of background release work, which has no caller
// to return it to.
func logErr(what string, err error) {
	slog.Error("cuda: "+what, "err", err)
}
