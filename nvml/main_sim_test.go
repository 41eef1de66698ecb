//go:build !gpu

package nvml

import (
	"fmt"
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
)

// TestMain points the package at the NVML simulator before any test runs
// and, after them, fails the run if they left NVML initialized or an
// event set (a Watcher's goroutine) alive.
func TestMain(m *testing.M) {
	nvmlsim.Main(func() int {
		code := m.Run()
		if n, sets, inits := initialized(), nvmlsim.Stat("sets"), nvmlsim.Stat("init"); n != 0 || sets != 0 || inits != 0 {
			fmt.Fprintf(os.Stderr, "leak: Init count %d, %d event sets, NVML's count %d after the tests\n", n, sets, inits)
			if code == 0 {
				code = 1
			}
		}
		return code
	})
}
