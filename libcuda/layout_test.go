package libcuda

import (
	"testing"

	"github.com/purecuda/purecuda/internal/layoutcheck"
)

// The generated table (zlayout_test.go) is written in these names.
type (
	layoutType  = layoutcheck.Type
	layoutField = layoutcheck.Field
)

// TestLayoutMatchesC builds a C program against cuda.h that prints
// sizeof, _Alignof and offsetof for every generated struct, union and
// member, runs it and compares each number with Go's. The gpu build
// (layoutRequired) fails instead of skipping without a C compiler or the
// headers.
func TestLayoutMatchesC(t *testing.T) {
	layoutcheck.Check(t, layoutcheck.Program{
		Header:   "cuda.h",
		Version:  "CUDA_VERSION",
		Want:     CUDA_VERSION,
		Required: layoutRequired,
	}, layoutTypes[:])
}
