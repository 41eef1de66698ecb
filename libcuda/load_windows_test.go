//go:build windows && amd64

package libcuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/purecuda/purecuda/internal/dl"
)

// envSystem32Nvcuda, set to 1, says that the system directory holds an
// nvcuda.dll (.ci/windows-wine puts the simulator there).
const envSystem32Nvcuda = "PURECUDA_SYSTEM32_NVCUDA"

// TestLoadTakesNvcudaFromSystem32Only puts a decoy nvcuda.dll (the ABI
// fixture) beside the test binary, the first place Windows' default DLL
// search looks, and checks that the loader, without PURECUDA_LIBCUDA, takes
// the one in the system directory.
func TestLoadTakesNvcudaFromSystem32Only(t *testing.T) {
	if os.Getenv(envSystem32Nvcuda) != "1" {
		t.Skip(envSystem32Nvcuda + "=1 runs it, when System32 holds an nvcuda.dll (.ci/windows-wine)")
	}
	decoySrc := os.Getenv(envABIDLL)
	if decoySrc == "" {
		t.Fatalf("%s is not set: it names the DLL used as the decoy", envABIDLL)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	decoy := filepath.Join(filepath.Dir(exe), "nvcuda.dll")
	if _, err := os.Stat(decoy); err == nil {
		t.Fatalf("%s exists already", decoy)
	}
	data, err := os.ReadFile(decoySrc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(decoy, data, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(decoy)
	t.Setenv(EnvLibrary, "")

	d, err := open(os.Getenv)
	if err != nil {
		t.Fatalf("nvcuda.dll not loaded: %v", err)
	}
	lib := d.Lib
	defer lib.Close()
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(sys, "nvcuda.dll"); !strings.EqualFold(d.Path, want) {
		t.Errorf("path %q, want %q", d.Path, want)
	}
	h, ok := dl.Handle(lib)
	if !ok {
		t.Fatalf("%T is no DLL", lib)
	}
	var buf [windows.MAX_LONG_PATH]uint16
	n, err := windows.GetModuleFileName(h, &buf[0], uint32(len(buf)))
	if err != nil {
		t.Fatal(err)
	}
	file := windows.UTF16ToString(buf[:n])
	if !strings.EqualFold(filepath.Dir(file), sys) {
		t.Errorf("loaded %s, want the one in %s", file, sys)
	}
	if _, ok := lib.Sym("abi_args"); ok {
		t.Error("the decoy beside the executable was loaded")
	}
	if _, ok := lib.Sym("cuGetProcAddress_v2"); !ok {
		t.Error("the module loaded has no cuGetProcAddress_v2")
	}
}
