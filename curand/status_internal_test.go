package curand

import (
	"errors"
	"testing"
)

// A status is an error with the C name, and errors.Is compares it; a
// failed status returned by a wrapper is boxed once.
func TestStatusIsAnError(t *testing.T) {
	var err error = CURAND_STATUS_TYPE_ERROR
	if !errors.Is(err, CURAND_STATUS_TYPE_ERROR) || err.Error() != "CURAND_STATUS_TYPE_ERROR (103)" {
		t.Errorf("%v", err)
	}
	if n := testing.AllocsPerRun(100, func() { err = procGenerate.result(uintptr(CURAND_STATUS_TYPE_ERROR)) }); n != 0 {
		t.Errorf("a failed status allocates %v times", n)
	}
}
