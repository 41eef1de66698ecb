package cbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// Build compiles s into a shared library, unless a build of the same
// compiler, key and source is in the cache already, and returns its path.
// Concurrent test binaries each build into a temporary folder and rename
// the result into place, so none sees half a library.
func Build(s Source) (string, error) {
	cc := compiler()
	if cc == "" {
		return "", errors.New("no C compiler (cc)")
	}
	sum := sha256.Sum256(append([]byte(cc+"\x00"+s.Key+"\x00"), s.Text...))
	base := s.Dir
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		base = filepath.Join(cache, "purecuda")
	}
	dir := filepath.Join(base, strings.TrimSuffix(s.Name, ".c")+"-"+hex.EncodeToString(sum[:8]))
	so := filepath.Join(dir, s.Lib)
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
	c := filepath.Join(tmp, s.Name)
	if err := os.WriteFile(c, s.Text, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, s.Lib)
	args := append([]string{"-O2", "-g", "-shared", "-fPIC", "-pthread", "-o", out, c}, s.Args...)
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s with %s: %v\n%s", s.Name, cc, err, msg)
	}
	if err := os.Rename(out, so); err != nil {
		return "", err
	}
	return so, nil
}

// compiler is the C compiler: $CC, else cc, gcc or clang; "" when none.
func compiler() string {
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

// Bind opens the library lib (the stand-in that a package already loaded
// gives the same copy) and binds each hook; a hook lib lacks is an error.
func Bind(lib string, hooks ...Hook) error {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return err
	}
	for _, k := range hooks {
		if _, err := purego.Dlsym(h, k.Name); err != nil {
			return errors.New(lib + ": no " + k.Name)
		}
	}
	for _, k := range hooks {
		purego.RegisterLibFunc(k.Fn, h, k.Name)
	}
	return nil
}
