//go:build !gpu

package testenv

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

// buildSimulator compiles sim.c into a shared library in the user's cache
// directory, keyed by the compiler and the source, and returns its path.
// Concurrent test binaries each build into a temporary file and rename it
// into place, so none sees half a library.
func buildSimulator() (string, error) {
	cc := findCompiler()
	if cc == "" {
		return "", errors.New("no C compiler (cc)")
	}
	sum := sha256.Sum256(append([]byte(cc+"\x00"), simSource...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "purecuda", "sim-"+hex.EncodeToString(sum[:8]))
	return buildCached(cc, dir, "libcudasim.so", "sim.c", simSource)
}

// buildCached compiles the C source src (named cname) into the shared
// library lib in dir, unless it is there already, with args after the
// source: into a temporary folder first, then renamed into place.
func buildCached(cc, dir, lib, cname string, src []byte, args ...string) (string, error) {
	so := filepath.Join(dir, lib)
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
	c := filepath.Join(tmp, cname)
	if err := os.WriteFile(c, src, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, lib)
	cmd := append([]string{"-O2", "-g", "-shared", "-fPIC", "-pthread", "-o", out, c}, args...)
	if msg, err := exec.Command(cc, cmd...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s with %s: %v\n%s", cname, cc, err, msg)
	}
	if err := os.Rename(out, so); err != nil {
		return "", err
	}
	return so, nil
}

func findCompiler() string {
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

func openHooks(lib string, failAfter *func(string, int32, int32, int32) int32, stat *func(string) int64) error {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return err
	}
	purego.RegisterLibFunc(failAfter, h, "sim_fail_after")
	purego.RegisterLibFunc(stat, h, "sim_stat")
	return nil
}

// simSource is the simulator, sim.c.
//
//go:embed sim/sim.c
var simSource []byte
