package curand

import (
	"errors"
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The search follows $CUDA_PATH, conda and pip's nvidia/cu13/lib and
// nvidia/curand/lib, after the names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) { testenv.CheckSearch(t, search) }

// A path in the variable is the only place tried; a library there that
// lacks curandCreateGenerator is refused, and the error names the variable.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	testenv.CheckVariableOnly(t, search, ErrNoLibrary, func(getenv func(string) string) error {
		_, err := open(getenv)
		return err
	}, "curandCreateGenerator")
}

// The file names follow the library's own major version, not CUDA's.
func TestFileNamesFollowTheLibrarysVersion(t *testing.T) {
	want := map[string]string{"linux": "libcurand.so.10", "windows": "curand64_10.dll"}[runtime.GOOS]
	if want != "" && libraryNames[0] != want {
		t.Errorf("the first name tried is %s, want %s", libraryNames[0], want)
	}
}

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
