//go:build windows && amd64

package libcuda

import (
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/dl"
)

// envABIDLL names the environment variable that gives the path of
// testdata/abi.c built as a Windows DLL (x86_64-w64-mingw32-gcc -shared, as
// .ci/windows-wine does): Windows has no C compiler to count on.
const envABIDLL = "PURECUDA_ABI_DLL"

// abiLibrary opens the ABI fixture DLL named by $PURECUDA_ABI_DLL, so the
// trampoline is checked against the Windows x64 calling convention. Without
// it the tests skip, unless PURECUDA_REQUIRE_SIM=1 (as in CI) makes that a
// failure.
func abiLibrary(t testing.TB) dl.Library {
	t.Helper()
	p := os.Getenv(envABIDLL)
	if p == "" {
		if os.Getenv("PURECUDA_REQUIRE_SIM") == "1" {
			t.Fatalf("%s is not set (PURECUDA_REQUIRE_SIM=1)", envABIDLL)
		}
		t.Skip(envABIDLL + " is not set: build testdata/abi.c as a DLL with mingw-w64 (see .ci/windows-wine)")
	}
	lib, err := dl.OpenLibrary(p)
	if err != nil {
		t.Fatalf("loading %s: %v", p, err)
	}
	t.Cleanup(lib.Close)
	return lib
}
