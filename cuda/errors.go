package cuda

import (
	"errors"
	"fmt"
	"log/slog"
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
	// ErrCapturing is matched by the error of Stream.Close while the
	// stream is being captured.
	ErrCapturing = errors.New("cuda: stream is being captured")
)

// driverErr names the driver call that failed; errors.Is matches err, and
// so the libcuda.Result it wraps.
func driverErr(call string, err error) error {
	return fmt.Errorf("cuda: %s: %w", call, err)
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
