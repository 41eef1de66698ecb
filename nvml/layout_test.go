package nvml

import (
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/layoutcheck"
)

// The generated table (zlayout_test.go) is written in these names.
type (
	layoutType  = layoutcheck.Type
	layoutField = layoutcheck.Field
)

// TestLayoutMatchesC builds a C program against nvml.h that prints
// sizeof, _Alignof and offsetof for every generated struct, union and
// member, runs it and compares each number with Go's. It needs nvml.h
// ($CUDA_PATH/include, /usr/local/cuda/include or
// ../shared/cuda/13.0/include) and a C compiler; in CI
// (PURECUDA_REQUIRE_SIM=1 and CUDA_PATH set) a missing one is a failure.
func TestLayoutMatchesC(t *testing.T) {
	layoutcheck.Check(t, layoutcheck.Program{
		Header:   "nvml.h",
		Version:  "NVML_API_VERSION",
		Want:     NVML_API_VERSION,
		Required: os.Getenv("PURECUDA_REQUIRE_SIM") == "1" && os.Getenv("CUDA_PATH") != "",
	}, layoutTypes[:])
}
