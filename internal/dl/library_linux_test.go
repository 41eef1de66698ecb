//go:build linux && (amd64 || arm64)

package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// mkdirs makes root/<each path> and returns them.
func mkdirs(t *testing.T, root string, paths ...string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		d := filepath.Join(root, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// writeExe writes an executable file at path.
func writeExe(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// inOrder checks that every one of want is in places, in want's order.
func inOrder(t *testing.T, pkg string, places, want []string) {
	t.Helper()
	at := -1
	for _, w := range want {
		i := slices.Index(places, w)
		if i < 0 {
			t.Errorf("%s: %s is not searched: %q", pkg, w, places)
			continue
		}
		if i < at {
			t.Errorf("%s: %s is searched before the places listed ahead of it: %q", pkg, w, places)
		}
		at = i
	}
}

// Every row's Linux search: the names through the loader first; a driver
// library's folders, each with every name; a toolkit library's
// toolkit, conda and pip folders, in order.
func TestLinuxPlacesOfEveryRow(t *testing.T) {
	root := t.TempDir()
	vars := map[string]string{
		"CUDA_PATH":    filepath.Join(root, "cuda-13.0"),
		"CONDA_PREFIX": filepath.Join(root, "conda"),
		"VIRTUAL_ENV":  filepath.Join(root, "venv"),
		"HOME":         filepath.Join(root, "home"),
		"PATH":         filepath.Join(root, "torch", ".venv", "bin"),
	}
	writeExe(t, filepath.Join(root, "torch", ".venv", "bin", "python3"))
	if err := os.WriteFile(filepath.Join(root, "torch", ".venv", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range rows(t) {
		places, sites := s.linuxPlaces(env(vars))
		if len(places) < len(s.Linux) || !slices.Equal(places[:len(s.Linux)], s.Linux) {
			t.Errorf("%s: the loader's names %q do not come first: %q", s.Pkg, s.Linux, places)
		}
		if s.Driver {
			want := slices.Clone(s.Linux)
			for _, d := range s.LinuxDirs {
				for _, n := range s.Linux {
					want = append(want, filepath.Join(d, n))
				}
			}
			if !slices.Equal(places, want) || sites != nil {
				t.Errorf("%s: places %q, sites %q; want %q and none", s.Pkg, places, sites, want)
			}
			continue
		}
		want := mkdirs(t, root, "cuda-13.0/lib64", "cuda-13.0/targets/x86_64-linux/lib", "conda/lib")
		for _, site := range []string{"venv/lib/python3.11/site-packages", "conda/lib/python3.12/site-packages",
			"torch/.venv/lib/python3.12/site-packages", "home/.local/lib/python3.13/site-packages"} {
			for _, p := range s.Pip {
				want = append(want, mkdirs(t, root, filepath.Join(site, "nvidia", p, "lib"))...)
			}
		}
		places, sites = s.linuxPlaces(env(vars))
		inOrder(t, s.Pkg, places, want)
		if len(s.Pip) > 0 {
			venv := filepath.Join(root, "torch", ".venv", "lib", "python3*", "site-packages") + " (the python3 on PATH: " + filepath.Join(root, "torch", ".venv", "bin", "python3") + ")"
			if !slices.Contains(sites, venv) || !slices.Contains(sites, filepath.Join(root, "venv", "lib", "python3*", "site-packages")+" ($VIRTUAL_ENV)") {
				t.Errorf("%s: sites %q lack the venv of the python3 on PATH or $VIRTUAL_ENV's", s.Pkg, sites)
			}
		}
	}
}

// The python3 on PATH: a virtual environment's folder (pyvenv.cfg beside
// the executable's folder, the link not followed), its base's when it
// includes the system site-packages; an installation's prefix, as found
// and through its links.
func TestPythonPrefixes(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	writeExe(t, filepath.Join(base, "bin", "python3.12"))

	venv := filepath.Join(root, "opt", "torch", ".venv")
	mkdirs(t, venv, "bin")
	if err := os.Symlink(filepath.Join(base, "bin", "python3.12"), filepath.Join(venv, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(venv, "pyvenv.cfg")
	write := func(text string) {
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := strings.Join([]string{"", "relative/bin", filepath.Join(root, "empty"), filepath.Join(venv, "bin"), filepath.Join(base, "bin")}, string(os.PathListSeparator))
	write("home = " + filepath.Join(base, "bin") + "\ninclude-system-site-packages = false\nversion = 3.12.3\n")
	exe, prefixes := pythonPrefixes(env(map[string]string{"PATH": path}))
	if exe != filepath.Join(venv, "bin", "python3") || !slices.Equal(prefixes, []string{venv}) {
		t.Errorf("venv: %s, %q; want %s's python3 and the venv alone", exe, prefixes, venv)
	}
	write("home = " + filepath.Join(base, "bin") + "\ninclude-system-site-packages = true\n")
	if _, prefixes = pythonPrefixes(env(map[string]string{"PATH": path})); !slices.Equal(prefixes, []string{venv, base}) {
		t.Errorf("venv with the system's site-packages: %q, want %q", prefixes, []string{venv, base})
	}

	// No venv: the prefix as found, then through the link.
	conda := filepath.Join(root, "conda")
	mkdirs(t, conda, "bin")
	if err := os.Symlink(filepath.Join(base, "bin", "python3.12"), filepath.Join(conda, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	exe, prefixes = pythonPrefixes(env(map[string]string{"PATH": filepath.Join(conda, "bin")}))
	if exe != filepath.Join(conda, "bin", "python3") || !slices.Equal(prefixes, []string{conda, base}) {
		t.Errorf("linked installation: %s, %q; want %q", exe, prefixes, []string{conda, base})
	}
	if exe, prefixes = pythonPrefixes(env(map[string]string{"PATH": filepath.Join(root, "empty")})); exe != "" || prefixes != nil {
		t.Errorf("no python3: %s, %q", exe, prefixes)
	}

	// The search finds a wheel there, and the error says where it looked.
	lib := mkdirs(t, venv, "lib/python3.12/site-packages/nvidia/cu13/lib")[0]
	s := &Spec{Pkg: "p", What: "Lib", Env: "PURECUDA_LIBP", Linux: []string{"libpurecuda-absent.so.1"}, Pip: []string{"cu13"}, Install: "install it"}
	l, f := Open(s, env(map[string]string{"PATH": filepath.Join(venv, "bin")}))
	if l != nil {
		t.Fatalf("opened %s", l.Path)
	}
	if !slices.ContainsFunc(f.Tried, func(a Attempt) bool { return a.Path == lib }) {
		t.Errorf("the venv's wheel folder %s was not tried: %v", lib, f.Tried)
	}
	msg := s.ErrorText(f)
	if want := "looked for pip's nvidia/cu13/lib in:\n\t" + filepath.Join(venv, "lib", "python3*", "site-packages") + " (the python3 on PATH: " + filepath.Join(venv, "bin", "python3") + ")"; !strings.Contains(msg, want) {
		t.Errorf("the message lacks %q:\n%s", want, msg)
	}
	if want := lib + ": no libpurecuda-absent.so.1 there"; !strings.Contains(msg, want) {
		t.Errorf("the message lacks %q:\n%s", want, msg)
	}
}

// With the variable set, the file it names is the only place tried; a
// library there that is not the row's (libc) is refused for lacking the
// identifying symbol.
func TestTheVariableIsTheOnlyPlaceTried(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "absent.so")
	for _, s := range rows(t) {
		l, f := Open(s, env(map[string]string{s.Env: bad, "CUDA_PATH": "/usr/local/cuda"}))
		if l != nil || f == nil || !f.FromEnv || len(f.Tried) != 1 || f.Tried[0].Path != bad || !errors.Is(f.Tried[0].Err, os.ErrNotExist) {
			t.Errorf("%s: Open = %v, %+v; want only %s tried, not found", s.Pkg, l, f, bad)
		}
		l, f = Open(s, env(map[string]string{s.Env: "libc.so.6"}))
		if l != nil || f == nil || len(f.Tried) != 1 || f.Tried[0].Err == nil || f.Tried[0].Err.Error() != "no "+s.Ident[0]+": not the "+s.What+" library" {
			t.Errorf("%s: Open(libc.so.6) = %v, %+v; want it refused for lacking %s", s.Pkg, l, f, s.Ident[0])
		}
	}
}

// dlerror's text is per thread: the reason of a failed dlopen must be
// read on the thread that failed. Goroutines that move between threads
// (several at once, yielding) load a missing library 1,000 times; every
// error must give the reason, naming the file.
func TestFailedOpenAlwaysGivesTheReason(t *testing.T) {
	const name = "libpurecuda-absent.so.1"
	var wg sync.WaitGroup
	errs := make(chan string, 1000)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				runtime.Gosched()
				_, err := OpenLibrary(name)
				if err == nil || !strings.Contains(err.Error(), name) {
					errs <- fmt.Sprintf("%v", err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n < 5 {
			t.Errorf("a failed dlopen of %s gave %q, without the reason", name, e)
		}
		n++
	}
	if n > 0 {
		t.Errorf("%d of 1000 failed opens lacked the reason", n)
	}
}

// The version call's shapes, against libc: getpid() as a size_t f(void),
// pipe2(int[2], flags) given two pointers (flags it refuses, before it
// writes anything) as a failing status f(int*, int*). The other shapes
// are the simulators' (cuDriverGetVersion, cublasGetProperty), which the
// packages' tests load.
func TestVersionCallShapes(t *testing.T) {
	lib, err := OpenLibrary("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	sym := func(name string) uintptr {
		a, ok := lib.Sym(name)
		if !ok {
			t.Fatalf("libc has no %s", name)
		}
		return a
	}
	var l Opened
	if err := askVersion(VersionReturn, sym("getpid"), &l); err != nil || l.Version != os.Getpid() {
		t.Errorf("VersionReturn: %d, %v; want the pid %d", l.Version, err, os.Getpid())
	}
	err = askVersion(VersionMajorMinor, sym("pipe2"), &l)
	var st errStatus
	if !errors.As(err, &st) || st != -1 || err.Error() != "failed with status -1" {
		t.Errorf("VersionMajorMinor with a failing call: %v, want status -1", err)
	}
}
