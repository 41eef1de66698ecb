//go:build linux && (amd64 || arm64)

package libcuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openDriverError opens the driver as Load would, with $PURECUDA_LIBCUDA set
// to path, and returns the LoadError (the driver TestMain loaded stays).
func openDriverError(t *testing.T, path string) *LoadError {
	t.Helper()
	t.Setenv(EnvLibrary, path)
	d, err := openDriver()
	if err == nil {
		d.lib.close()
		t.Fatalf("%s=%s: opened %s as a driver, want an error", EnvLibrary, path, d.path)
	}
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrNoDriver) {
		t.Fatalf("error %v (%T), want a *LoadError matching ErrNoDriver", err, err)
	}
	return le
}

func TestEnvLibraryThatDoesNotExistIsAnErrorWithNoFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libcuda.so.1")
	le := openDriverError(t, path)
	if len(le.Tried) != 1 || le.Tried[0].Path != path {
		t.Fatalf("tried %v, want only %s (no fallback to the system's driver)", le.Tried, path)
	}
	if !le.FromEnv {
		t.Error("FromEnv is false")
	}
	msg := le.Error()
	for _, want := range []string{path, "that $" + EnvLibrary + " names", os.ErrNotExist.Error(), "or unset it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(le.Tried[0].Err, os.ErrNotExist) {
		t.Errorf("attempt error %v does not match os.ErrNotExist", le.Tried[0].Err)
	}
}

func TestEnvLibraryThatIsNoLibraryIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libcuda.so.1")
	if err := os.WriteFile(path, []byte("not a shared library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	le := openDriverError(t, path)
	if len(le.Tried) != 1 || le.Tried[0].Path != path {
		t.Fatalf("tried %v, want only %s", le.Tried, path)
	}
	if msg := le.Error(); !strings.Contains(msg, EnvLibrary) || !strings.Contains(msg, path) {
		t.Errorf("message should name %s and the path:\n%s", EnvLibrary, msg)
	}
}

func TestEnvLibraryThatIsNoCUDADriverIsAnError(t *testing.T) {
	// The C math library opens everywhere glibc does and has no
	// cuDriverGetVersion.
	le := openDriverError(t, "libm.so.6")
	last := le.Tried[len(le.Tried)-1]
	if len(le.Tried) != 1 || last.Path != "libm.so.6" || !strings.Contains(last.Err.Error(), "not a CUDA driver") || !le.FromEnv {
		t.Fatalf("tried %v, want libm.so.6 refused as not a CUDA driver", le.Tried)
	}
}
