package cufft

import (
	"errors"
	"testing"
)

// A status is an error with the C name, and errors.Is compares it; a
// failed status returned by a wrapper is boxed once.
func TestStatusIsAnError(t *testing.T) {
	var err error = CUFFT_INVALID_SIZE
	if !errors.Is(err, CUFFT_INVALID_SIZE) || err.Error() != "CUFFT_INVALID_SIZE (8)" {
		t.Errorf("%v", err)
	}
	if n := testing.AllocsPerRun(100, func() { err = procExecC2C.result(uintptr(CUFFT_INVALID_SIZE)) }); n != 0 {
		t.Errorf("a failed status allocates %v times", n)
	}
}
