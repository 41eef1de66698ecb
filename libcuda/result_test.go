package libcuda

import (
	"errors"
	"fmt"
	"testing"
)

func TestResultIsComparableThroughWrapping(t *testing.T) {
	err := fmt.Errorf("waiting: %w", error(CUDA_ERROR_NOT_READY))
	if !errors.Is(err, CUDA_ERROR_NOT_READY) {
		t.Fatal("errors.Is does not see a wrapped Result")
	}
	if errors.Is(err, CUDA_ERROR_INVALID_VALUE) {
		t.Fatal("errors.Is matches a different Result")
	}
}

func TestResultMessageNamesCodeWithoutDriver(t *testing.T) {
	withoutDriver(t)
	descriptions.Delete(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
	if got := CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.Error(); got != "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900)" {
		t.Fatalf("message %q", got)
	}
	if got := Result(123456).Error(); got != "CUresult(123456) (123456)" {
		t.Fatalf("unknown result message %q", got)
	}
}

func TestFailedCallReturnsBoxedResultWithoutAllocating(t *testing.T) {
	p := &proc{symbol: "cuTest"}
	var err error
	if n := testing.AllocsPerRun(100, func() { err = p.result(uintptr(CUDA_ERROR_NOT_READY)) }); n != 0 {
		t.Fatalf("a failed result allocates %v times", n)
	}
	if err != CUDA_ERROR_NOT_READY {
		t.Fatalf("got %v", err)
	}
	if p.result(0) != nil {
		t.Fatal("CUDA_SUCCESS is an error")
	}
	// A negative 32-bit code in a 64-bit register keeps its value.
	if got := p.result(uintptr(0xffffffff_000002bc)); got != Result(700) {
		t.Fatalf("upper register bits leak into the Result: %v", got)
	}
}
