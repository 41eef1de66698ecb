//go:build linux && (amd64 || arm64) && !gpu

package nvml

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

func TestLoadErrorNamesEveryPlaceTried(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"); err == nil {
		t.Skip("this machine has NVML installed")
	}
	_, err := open(testenv.Env(nil))
	var le *LoadError
	if !errors.As(err, &le) || le.FromEnv || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("open without NVML: %v", err)
	}
	var paths []string
	for _, a := range le.Tried {
		paths = append(paths, a.Path)
	}
	want := []string{"libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", "/usr/lib/wsl/lib/libnvidia-ml.so.1"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("tried %v, want %v", paths, want)
	}
	msg := err.Error()
	for _, w := range append(want, EnvLibrary, "NVIDIA driver") {
		if !strings.Contains(msg, w) {
			t.Errorf("the message lacks %q:\n%s", w, msg)
		}
	}
}

func TestLoadFromTheEnvironmentTriesThatAlone(t *testing.T) {
	_, err := open(testenv.Env(map[string]string{EnvLibrary: "/nonexistent/libnvidia-ml.so.1"}))
	var le *LoadError
	if !errors.As(err, &le) || !le.FromEnv || len(le.Tried) != 1 || !errors.Is(le.Tried[0].Err, os.ErrNotExist) {
		t.Fatalf("open of a missing $%s: %v", EnvLibrary, err)
	}
	if !strings.Contains(err.Error(), "$PURECUDA_LIBNVML names") {
		t.Errorf("the message does not say where the path came from: %v", err)
	}
}

func TestALibraryWithoutNvmlInitIsNotTaken(t *testing.T) {
	_, err := open(testenv.Env(map[string]string{EnvLibrary: "libc.so.6"}))
	var le *LoadError
	if !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0].Err == nil || le.Tried[0].Err.Error() != "no nvmlInit_v2: not the NVML library" {
		t.Fatalf("open of libc: %v, want the attempt's error to say it has no nvmlInit_v2", err)
	}
}
