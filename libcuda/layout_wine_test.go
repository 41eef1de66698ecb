//go:build linux && amd64 && !gpu

package libcuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// envWineLayout, set to 1, runs TestLayoutMatchesCOnWindows; .ci/windows-wine
// sets it, with WINEPREFIX pointing at its prefix.
const envWineLayout = "PURECUDA_WINE_LAYOUT"

// TestLayoutMatchesCOnWindows is TestLayoutMatchesC for windows/amd64: the
// layout program is compiled from cuda.h by mingw-w64 (LLP64: long is 32
// bits, and MSVC's rules for bit-fields and packing) and run under Wine.
// The Go side is this binary's numbers: gc lays out types by GOARCH alone,
// so linux/amd64's sizes, alignments and offsets are windows/amd64's.
func TestLayoutMatchesCOnWindows(t *testing.T) {
	if os.Getenv(envWineLayout) != "1" {
		t.Skip(envWineLayout + "=1 runs it (needs x86_64-w64-mingw32-gcc and wine; see .ci/windows-wine)")
	}
	include := layoutInclude()
	if include == "" {
		t.Fatal("no cuda.h in $CUDA_PATH/include, /usr/local/cuda/include or ../shared/cuda/13.0/include")
	}
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		t.Fatal(err)
	}
	wine, err := exec.LookPath("wine")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, exe := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout.exe")
	if err := os.WriteFile(src, layoutProgram(), 0o666); err != nil {
		t.Fatal(err)
	}
	// The ANSI stdio of mingw-w64 knows %zu, which msvcrt's printf may not.
	if out, err := exec.Command(cc, "-std=gnu11", "-D__USE_MINGW_ANSI_STDIO=1", "-I", include, "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	cmd := exec.Command(wine, exe)
	cmd.Env = append(os.Environ(), "WINEDEBUG=-all")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the layout program under wine: %v", err)
	}
	checkLayout(t, out, include)
}
