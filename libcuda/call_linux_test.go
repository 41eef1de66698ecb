//go:build linux && (amd64 || arm64)

package libcuda

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

//go:embed testdata/abi.c
var abiSource []byte

// abiLibrary compiles testdata/abi.c into a shared library with the system
// C compiler and opens it, so the trampoline is checked against the
// system's C calling convention.
func abiLibrary(t testing.TB) dl.Library {
	t.Helper()
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler (cc, gcc, clang) to build the ABI fixture")
	}
	dir := t.TempDir()
	src, so := filepath.Join(dir, "abi.c"), filepath.Join(dir, "libabi.so")
	if err := os.WriteFile(src, abiSource, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-O1", "-shared", "-fPIC", "-o", so, src).CombinedOutput()
	if err != nil {
		t.Fatalf("building the ABI fixture: %v\n%s", err, out)
	}
	lib, err := dl.OpenLibrary(so)
	if err != nil {
		t.Fatalf("opening %s: %v", so, err)
	}
	t.Cleanup(lib.Close)
	return lib
}
