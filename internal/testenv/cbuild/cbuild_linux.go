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
// (BuildStub is the same for a stand-in of several files.)
func Build(s Source) (string, error) {
	return build(strings.TrimSuffix(s.Name, ".c"), s.Lib, s.Dir, s.Key, []file{{s.Name, s.Text}}, s.Args)
}

// buildStub is BuildStub on Linux: the library is lib<name>.so.
func buildStub(name string, files []file, links []string) (string, error) {
	var args []string
	for _, l := range links {
		if strings.ContainsAny(l, `/\`) || strings.HasSuffix(l, ".so") {
			args = append(args, l)
		} else {
			args = append(args, "-l"+l)
		}
	}
	return build(name, "lib"+name+".so", "", strings.Join(links, "\x00"), files, args)
}

// build compiles the .c files of files (the others, headers, are written
// beside them) into the shared library lib in the cache folder
// <dir>/<stem>-<hash of the compiler, key and files>, unless it is there
// already, and returns its path. Concurrent test binaries each build into
// a temporary folder and rename the result into place, so none sees half
// a library.
func build(stem, lib, dir, key string, files []file, args []string) (string, error) {
	cc := compiler()
	if cc == "" {
		return "", errors.New("no C compiler (cc)")
	}
	h := sha256.New()
	h.Write([]byte(cc + "\x00" + key + "\x00"))
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.text))
		h.Write(f.text)
	}
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "purecuda")
	}
	dir = filepath.Join(dir, stem+"-"+hex.EncodeToString(h.Sum(nil)[:8]))
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
	out := filepath.Join(tmp, lib)
	cargs := []string{"-O2", "-g", "-shared", "-fPIC", "-pthread", "-o", out}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.Base(f.name))
		if err := os.WriteFile(p, f.text, 0o644); err != nil {
			return "", err
		}
		if strings.HasSuffix(f.name, ".c") {
			cargs = append(cargs, p)
		}
	}
	cargs = append(cargs, args...)
	if msg, err := exec.Command(cc, cargs...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s with %s: %v\n%s", lib, cc, err, msg)
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
