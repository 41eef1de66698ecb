//go:build !gpu && linux

package nvmlsim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	_ "embed"

	"github.com/ebitengine/purego"
)

// source is the simulator, nvmlsim.c.
//
//go:embed sim/nvmlsim.c
var source []byte

// library compiles nvmlsim.c into a shared library in the user's cache
// directory, keyed by the compiler and the source, and returns its path.
// Concurrent test binaries each build into a temporary folder and rename
// the result into place, so none sees half a library.
func library() (string, error) {
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		return "", errors.New("no C compiler (cc)")
	}
	sum := sha256.Sum256(append([]byte(cc+"\x00"), source...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "purecuda", "nvmlsim-"+hex.EncodeToString(sum[:8]))
	so := filepath.Join(dir, "libnvmlsim.so")
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	c := filepath.Join(tmp, "nvmlsim.c")
	if err := os.WriteFile(c, source, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "libnvmlsim.so")
	if msg, err := exec.Command(cc, "-O2", "-g", "-shared", "-fPIC", "-pthread", "-o", out, c).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the NVML simulator with %s: %v\n%s", cc, err, msg)
	}
	if err := os.Rename(out, so); err != nil {
		return "", err
	}
	return so, nil
}

func openHooks(lib string, h *hooks) error {
	handle, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return err
	}
	purego.RegisterLibFunc(&h.postEvent, handle, "nvmlsim_post_event")
	purego.RegisterLibFunc(&h.setProcesses, handle, "nvmlsim_set_processes")
	purego.RegisterLibFunc(&h.stat, handle, "nvmlsim_stat")
	return nil
}
