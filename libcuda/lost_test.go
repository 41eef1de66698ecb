package libcuda_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// The sticky Results of cuda.h match ErrContextLost, wrapped or not, and
// still match themselves; other Results match only themselves.
func TestStickyResultsMatchErrContextLost(t *testing.T) {
	sticky := []libcuda.Result{226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911}
	for _, r := range sticky {
		err := fmt.Errorf("sync: cuStreamQuery: %w", r)
		if !errors.Is(err, libcuda.ErrContextLost) || !errors.Is(err, r) || !r.ContextLost() {
			t.Errorf("%v: ContextLost %v, errors.Is(ErrContextLost) %v, want both true", r, r.ContextLost(), errors.Is(err, libcuda.ErrContextLost))
		}
	}
	for _, r := range []libcuda.Result{libcuda.CUDA_ERROR_NOT_READY, libcuda.CUDA_ERROR_INVALID_VALUE, libcuda.CUDA_ERROR_OUT_OF_MEMORY, libcuda.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 999} {
		if errors.Is(r, libcuda.ErrContextLost) || r.ContextLost() {
			t.Errorf("%v matches ErrContextLost", r)
		}
	}
	if !errors.Is(libcuda.CUDA_ERROR_ILLEGAL_ADDRESS, libcuda.CUDA_ERROR_ILLEGAL_ADDRESS) || errors.Is(libcuda.CUDA_ERROR_ILLEGAL_ADDRESS, libcuda.CUDA_ERROR_LAUNCH_FAILED) {
		t.Error("a sticky Result no longer matches exactly itself")
	}
}
