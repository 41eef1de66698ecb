//go:build !gpu && linux && (amd64 || arm64)

package nvrtc_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/purecuda/purecuda/nvrtc"
)

// A PURECUDA_LIBNVRTC that cannot be opened is an error: Load does not
// fall back to the usual places.
func ExampleLoad() {
	os.Setenv(nvrtc.EnvLibrary, "/nonexistent/libnvrtc.so.13")
	defer os.Unsetenv(nvrtc.EnvLibrary)
	err := nvrtc.Load()
	fmt.Println(errors.Is(err, nvrtc.ErrNoLibrary))
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// true
	// nvrtc: cannot load the NVRTC library that $PURECUDA_LIBNVRTC names; tried:
	// /nonexistent/libnvrtc.so.13: file does not exist
	// point PURECUDA_LIBNVRTC at the NVRTC library (libnvrtc.so.13), or unset it to search the usual places
}
