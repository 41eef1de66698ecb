//go:build !gpu && linux && (amd64 || arm64)

package nvrtc

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/internal/testenv"
)

func TestSimulatorLibraryIsNotNVRTC(t *testing.T) {
	sim := testenv.SimLibrary()
	l, err := open(testenv.Env(map[string]string{EnvLibrary: sim}))
	if l != nil || !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), sim+": no nvrtcVersion: not the NVRTC library") {
		t.Fatalf("open(%s) = %v, %v; want it refused as not NVRTC", sim, l, err)
	}
}

// TestWrappersWithoutLibraryFailWithTheLoadError checks that a wrapper
// called while no library can be loaded returns the load error, and that
// Compile does too, instead of calling through a nil address.
func TestWrappersWithoutLibraryFailWithTheLoadError(t *testing.T) {
	if lazy.Loaded() != nil {
		t.Fatal("an NVRTC library is loaded in a simulator run")
	}
	lazy.SetFailure(&LoadError{Tried: []Attempt{{Path: "nowhere", Err: errors.New("absent")}}})
	t.Cleanup(func() { lazy.SetFailure(nil) })

	var major, minor int32
	if err := GetVersion(&major, &minor); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("GetVersion without a library = %v, want ErrNoLibrary", err)
	}
	if p, err := GetErrorString(NVRTC_ERROR_COMPILATION); p != nil || !errors.Is(err, ErrNoLibrary) {
		t.Errorf("GetErrorString without a library = %v, %v, want ErrNoLibrary", p, err)
	}
	if _, err := Compile(`extern "C" __global__ void k() {}`); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("Compile without a library = %v, want ErrNoLibrary", err)
	}
	if _, _, err := Version(); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("Version without a library = %v, want ErrNoLibrary", err)
	}
}

// TestWrapperCallAllocatesNothing points GetVersion's entry point at the
// simulator's cuDriverGetVersion (an int* out-parameter, returning 0):
// the generated call path, with Go pointers to locals, must not allocate.
func TestWrapperCallAllocatesNothing(t *testing.T) {
	lib, err := dl.OpenLibrary(testenv.SimLibrary())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.Close)
	fn, ok := lib.Sym("cuDriverGetVersion")
	if !ok {
		t.Fatal("the simulator has no cuDriverGetVersion")
	}
	if !atomic.CompareAndSwapUintptr(&procGetVersion.addr, 0, fn) {
		t.Fatal("nvrtcVersion is resolved in a simulator run")
	}
	t.Cleanup(func() { atomic.StoreUintptr(&procGetVersion.addr, 0) })
	var major, minor int32
	allocs := testing.AllocsPerRun(100, func() {
		if err := GetVersion(&major, &minor); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a generated call allocates %v times", allocs)
	}
	if major < 1000 {
		t.Errorf("the call did not write through its pointer: %d", major)
	}
}
