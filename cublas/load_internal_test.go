//go:build !gpu

package cublas

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The search follows $CUDA_PATH, conda and pip's nvidia/cu13/lib and
// nvidia/cublas/lib, after the names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) { testenv.CheckSearch(t, search) }

// No library anywhere: the error is ErrNoLibrary, names every place tried
// and the variable.
func TestLoadErrorNamesEveryPlaceAndTheVariable(t *testing.T) {
	dir := testenv.TempDir(t)
	_, err := open(testenv.Env(map[string]string{"CUDA_PATH": dir, "HOME": dir}))
	if runtime.GOOS == "linux" {
		if err := os.MkdirAll(filepath.Join(dir, "lib64"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err = open(testenv.Env(map[string]string{"CUDA_PATH": dir, "HOME": dir}))
	}
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("got %v, want a LoadError matching ErrNoLibrary", err)
	}
	msg := err.Error()
	for _, want := range append([]string{EnvLibrary, libraryNames[0]}, filepath.Join(dir, "lib64")) {
		if runtime.GOOS != "linux" && strings.Contains(want, "lib64") {
			continue
		}
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not name %s:\n%s", want, msg)
		}
	}
}

// A path in the variable is the only place tried; a library there that
// is not cuBLAS is refused.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	testenv.CheckVariableOnly(t, search, ErrNoLibrary, func(getenv func(string) string) error {
		_, err := open(getenv)
		return err
	}, "cublasCreate_v2")
}

// An entry point the loaded library lacks (the stand-in has no Cgemm) is
// a SymbolError from that function alone.
func TestMissingEntryPointIsASymbolError(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	err := Cgemm(0, 0, 0, 0, 0, 0, nil, nil, 0, nil, 0, nil, nil, 0)
	var se *SymbolError
	if !errors.As(err, &se) || !errors.Is(err, ErrSymbol) || se.Symbol != "cublasCgemm_v2" || !strings.Contains(err.Error(), "cublasCgemm_v2") {
		t.Fatalf("got %v, want a SymbolError for cublasCgemm_v2", err)
	}
	if lib, ok := Loaded(); !ok || lib.Version < 130000 {
		t.Errorf("Loaded: %+v, %v", lib, ok)
	}
}

// Status is an error with the C name, and errors.Is compares it.
func TestStatusIsAnError(t *testing.T) {
	var err error = CUBLAS_STATUS_INVALID_VALUE
	if !errors.Is(err, CUBLAS_STATUS_INVALID_VALUE) || !strings.HasPrefix(err.Error(), "CUBLAS_STATUS_INVALID_VALUE (7)") {
		t.Errorf("%v", err)
	}
	if CUBLAS_STATUS_SUCCESS.Err() != nil || CUBLAS_STATUS_NOT_SUPPORTED.Err() != CUBLAS_STATUS_NOT_SUPPORTED {
		t.Error("Err")
	}
}

// fits32 picks the 32-bit entry points exactly when every value fits a C
// int, negative ones (increments) included.
func TestFits32(t *testing.T) {
	for _, c := range []struct {
		vals []int
		want bool
	}{
		{nil, true},
		{[]int{0, 1, 64}, true},
		{[]int{math.MaxInt32, 1}, true},
		{[]int{math.MaxInt32 + 1}, false},
		{[]int{3, math.MinInt32}, true},
		{[]int{math.MinInt32 - 1}, false},
		{[]int{-1, -64, 7}, true},
		{[]int{math.MaxInt, 0}, false},
		{[]int{math.MinInt, 0}, false},
	} {
		if got := fits32(c.vals...); got != c.want {
			t.Errorf("fits32(%v) = %v, want %v", c.vals, got, c.want)
		}
	}
}
