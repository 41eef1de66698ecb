//go:build linux && (amd64 || arm64)

package libcuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// openDriverError opens the driver as Load would, with $PURECUDA_LIBCUDA set
// to path, and returns the LoadError (the driver TestMain loaded stays).
func openDriverError(t *testing.T, path string) *LoadError {
	t.Helper()
	d, err := open(func(k string) string {
		if k == EnvLibrary {
			return path
		}
		return ""
	})
	if err == nil {
		d.Lib.Close()
		t.Fatalf("%s=%s: opened %s as a driver, want an error", EnvLibrary, path, d.Path)
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
	if len(le.Tried) != 1 || last.Path != "libm.so.6" || last.Err.Error() != "no cuDriverGetVersion: not the CUDA driver library" || !le.FromEnv {
		t.Fatalf("tried %v, want libm.so.6 refused as not a CUDA driver", le.Tried)
	}
}

// Without a driver the first line a user reads must give the reason:
// dlerror's text is per thread, and was once read on another thread than
// the dlopen that failed (an empty "libcuda.so.1: "). 1,000 loads in a
// row, from goroutines that move between threads, each name the file and
// the loader's reason.
func TestLoadErrorAlwaysGivesTheReason(t *testing.T) {
	const name = "libcuda-purecuda-absent.so.1"
	getenv := func(k string) string {
		if k == EnvLibrary {
			return name
		}
		return ""
	}
	var wg sync.WaitGroup
	bad := make(chan string, 1000)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				runtime.Gosched()
				_, err := open(getenv)
				var le *LoadError
				if !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0].Err == nil ||
					!strings.Contains(le.Tried[0].Err.Error(), name) || !strings.Contains(err.Error(), name+": "+le.Tried[0].Err.Error()) {
					bad <- fmt.Sprintf("%v", err)
				}
			}
		}()
	}
	wg.Wait()
	close(bad)
	n := 0
	for msg := range bad {
		if n < 3 {
			t.Errorf("a failed load gave no reason:\n%s", msg)
		}
		n++
	}
	if n > 0 {
		t.Errorf("%d of 1000 failed loads gave no reason", n)
	}
}
