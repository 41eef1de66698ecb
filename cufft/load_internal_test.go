package cufft

import (
	"errors"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The search follows $CUDA_PATH, conda and pip's nvidia/cu13/lib and
// nvidia/cufft/lib, after the names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) { testenv.CheckSearch(t, search) }

// A path in the variable is the only place tried; a library there that
// lacks cufftMakePlanMany64 is refused, and the error names the variable.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	testenv.CheckVariableOnly(t, search, ErrNoLibrary, func(getenv func(string) string) error {
		_, err := open(getenv)
		return err
	}, "cufftMakePlanMany64")
}

// The file names follow the library's own major version, not CUDA's.
func TestFileNamesFollowTheLibrarysVersion(t *testing.T) {
	want := map[string]string{"linux": "libcufft.so.12", "windows": "cufft64_12.dll"}[runtime.GOOS]
	if want != "" && libraryNames[0] != want {
		t.Errorf("the first name tried is %s, want %s", libraryNames[0], want)
	}
}

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
