//go:build windows && amd64 && !gpu

package nvml

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/purecuda/purecuda/internal/testenv"
)

// envSystem32NVML, set to 1, says that the system directory holds an
// nvml.dll (.ci/windows-wine puts the NVML simulator there).
const envSystem32NVML = "PURECUDA_SYSTEM32_NVML"

func TestSearchPlacesAreSystem32ThenNVSMI(t *testing.T) {
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		t.Fatal(err)
	}
	got := spec.Places(testenv.Env(map[string]string{"ProgramW6432": `C:\Program Files`}))
	want := []string{filepath.Join(sys, "nvml.dll"), `C:\Program Files\NVIDIA Corporation\NVSMI\nvml.dll`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Places = %q, want %q", got, want)
	}
}

// TestLoadTakesNvmlFromSystem32 loads NVML without PURECUDA_LIBNVML: the
// nvml.dll of the system directory, by its full path.
func TestLoadTakesNvmlFromSystem32(t *testing.T) {
	if os.Getenv(envSystem32NVML) != "1" {
		t.Skip(envSystem32NVML + "=1 runs it, when System32 holds an nvml.dll (.ci/windows-wine)")
	}
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		t.Fatal(err)
	}
	l, err := open(testenv.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Lib.Close()
	if want := filepath.Join(sys, "nvml.dll"); !strings.EqualFold(l.Path, want) {
		t.Errorf("loaded %s, want %s", l.Path, want)
	}
}

// TestLoadFallsBackToNVSMI: where System32 has no nvml.dll, the one in
// %ProgramW6432%\NVIDIA Corporation\NVSMI is taken; a missing DLL is a
// place tried, with its error.
func TestLoadFallsBackToNVSMI(t *testing.T) {
	src := os.Getenv("PURECUDA_NVMLSIM_DLL")
	if src == "" {
		t.Skip("PURECUDA_NVMLSIM_DLL names the DLL to install as NVSMI's (.ci/windows-wine)")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: under Wine 8.0 its cleanup fails (see .ci/windows-wine);
	// the files are removed one by one here.
	pf, err := os.MkdirTemp("", "nvsmi-")
	if err != nil {
		t.Fatal(err)
	}
	nvsmi := filepath.Join(pf, "NVIDIA Corporation", "NVSMI")
	t.Cleanup(func() {
		for _, p := range []string{filepath.Join(nvsmi, "nvml.dll"), nvsmi, filepath.Dir(nvsmi), pf} {
			if err := os.Remove(p); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
	if err := os.MkdirAll(nvsmi, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nvsmi, "nvml.dll"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(pf, "System32", "nvml.dll")
	l, tried := spec.OpenPaths([]string{missing, filepath.Join(nvsmi, "nvml.dll")})
	if l == nil {
		t.Fatalf("nothing loaded: %v", tried)
	}
	defer l.Lib.Close()
	if l.Path != filepath.Join(nvsmi, "nvml.dll") {
		t.Errorf("loaded %s, want NVSMI's", l.Path)
	}
	_, err = open(testenv.Env(map[string]string{EnvLibrary: missing}))
	var le *LoadError
	if !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0].Path != missing || le.Tried[0].Err == nil {
		t.Errorf("a missing DLL: %v", err)
	}
}
