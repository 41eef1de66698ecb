package dl

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Library is an opened shared library (a .so through dlopen, a DLL
// through LoadLibrary).
type Library interface {
	// Sym returns the address of the exported symbol name, ok false when
	// the library has none.
	Sym(name string) (addr uintptr, ok bool)
	// Close unloads the library.
	Close()
}

// Spec is one row of tools/gen's library table as the loader reads it:
// what the library is called, where it is looked for and how it is told
// apart from other libraries (DESIGN.md's decisions 15 and 18). The
// generator writes every row into zlibraries.go (Libraries); each bound
// package's generated zload.go loads its own row through Open.
type Spec struct {
	Pkg  string // the Go package, for messages: "cublas"
	What string // the library, for messages: "cuBLAS"
	// Env is the environment variable that names the file to load; while
	// it is set, that file is the only place tried.
	Env string
	// Linux and Windows are the file names on each system, newest first
	// ("libcublas.so.13", "libcublas.so.12"; "cublas64_13.dll"). None:
	// NVIDIA ships no build for that system.
	Linux, Windows []string
	// Driver: the library comes with the NVIDIA driver, not a toolkit. On
	// Linux it is looked for through the dynamic loader, then in
	// LinuxDirs; on Windows in the system folder (System32), then in
	// WindowsDirs, never through the DLL search path. A toolkit library
	// is looked for through the dynamic loader, in a toolkit's folders,
	// conda's and pip's (Places).
	Driver bool
	// LinuxDirs and WindowsDirs are the folders a driver library is also
	// looked for in, in order. A Windows folder may begin with a
	// %VARIABLE% (%ProgramW6432%\NVIDIA Corporation\NVSMI); it is skipped
	// while the variable is unset.
	LinuxDirs, WindowsDirs []string
	// Pip are the folders under site-packages/nvidia whose lib/ holds a
	// toolkit library from NVIDIA's pip wheels: "cu13" (CUDA 13's
	// wheels), "cublas" (CUDA 12's).
	Pip []string
	// Install says how to get the library, for the error: "install a
	// CUDA toolkit, or pip install nvidia-cublas".
	Install string
	// Ident are the symbols a library must export to be taken: a file
	// that opens without them is another library (or another release
	// of this one, for versioned symbols).
	Ident []string
	// Version is the C function that gives the library's version, called
	// once when the library is taken (empty: none); VersionKind says how.
	Version     string
	VersionKind VersionKind
}

// VersionKind is the shape of a library's version call.
type VersionKind int

const (
	// VersionNone: the library has no version call.
	VersionNone VersionKind = iota
	// VersionInt: status f(int *version) (cuDriverGetVersion,
	// cufftGetVersion, ncclGetVersion); Opened.Version is *version.
	VersionInt
	// VersionMajorMinor: status f(int *major, int *minor) (nvrtcVersion,
	// nvJitLinkVersion); Opened.Major and Minor.
	VersionMajorMinor
	// VersionProperties: status f(libraryPropertyType, int *value),
	// asked for MAJOR_VERSION, MINOR_VERSION and PATCH_LEVEL
	// (cublasGetProperty); Opened.Version is
	// major*10000 + minor*100 + patch, and Major and Minor are set.
	VersionProperties
	// VersionReturn: size_t f(void) (cublasLtGetVersion); Opened.Version
	// is what it returns.
	VersionReturn
)

// Names are the library's file names on this system, newest first.
func (s *Spec) Names() []string { return s.namesFor(runtime.GOOS) }

func (s *Spec) namesFor(goos string) []string {
	switch goos {
	case "linux":
		return s.Linux
	case "windows":
		return s.Windows
	}
	return nil
}

// Opened is a library Open has taken.
type Opened struct {
	Lib  Library
	Path string // as it was opened: a path, or a name for the system's loader
	// Version, Major and Minor are the version call's answer (see
	// VersionKind); 0 where the library has none.
	Version      int
	Major, Minor int
}

// Attempt is one place Open tried, and why the library there was not
// taken.
type Attempt struct {
	Path string
	Err  error
}

// Failure is what Open found when it took no library: the packages turn
// it into their own *LoadError.
type Failure struct {
	Tried []Attempt
	// FromEnv: the one place tried was the one s.Env names.
	FromEnv bool
	// Sites are the Python site-packages folders (glob patterns) in which
	// nvidia/<Pip>/lib was looked for, each followed by where it came
	// from: "/opt/torch/.venv/lib/python3*/site-packages (the python3 on
	// PATH: /opt/torch/.venv/bin/python3)".
	Sites []string
}

// Open finds and opens s's library: with s.Env set (read through
// getenv), that file or none; otherwise the first of s.Places that opens,
// exports s.Ident and answers s.Version. It returns the library, or the
// Failure that names every place tried.
func Open(s *Spec, getenv func(string) string) (*Opened, *Failure) {
	if p := getenv(s.Env); p != "" {
		l, tried := s.openFirst([]string{p})
		if l == nil {
			return nil, &Failure{Tried: tried, FromEnv: true}
		}
		return l, nil
	}
	if len(s.Names()) == 0 {
		return nil, &Failure{Tried: []Attempt{{Path: runtime.GOOS + "/" + runtime.GOARCH,
			Err: fmt.Errorf("NVIDIA ships no %s for %s/%s", s.What, runtime.GOOS, runtime.GOARCH)}}}
	}
	places, sites := s.places(getenv)
	l, tried := s.openFirst(places)
	if l == nil {
		return nil, &Failure{Tried: tried, Sites: sites}
	}
	return l, nil
}

// OpenPaths opens the first of places that holds s's library, as Open
// does after the variable; it returns every attempt when none does.
func (s *Spec) OpenPaths(places []string) (*Opened, []Attempt) { return s.openFirst(places) }

// openFirst opens the first place that holds the library. A place is a
// library file, a name for the system's loader, or a folder in which
// s's names are looked for.
func (s *Spec) openFirst(places []string) (*Opened, []Attempt) {
	var tried []Attempt
	names := s.Names()
	for _, place := range places {
		paths := []string{place}
		if st, err := os.Stat(place); filepath.IsAbs(place) && err == nil && st.IsDir() {
			paths = nil
			for _, name := range names {
				if _, err := os.Stat(filepath.Join(place, name)); err == nil {
					paths = append(paths, filepath.Join(place, name))
				}
			}
			if len(paths) == 0 {
				tried = append(tried, Attempt{Path: place, Err: fmt.Errorf("no %s there", strings.Join(names, ", "))})
				continue
			}
		}
		for _, path := range paths {
			lib, err := OpenLibrary(path)
			if err != nil {
				tried = append(tried, Attempt{Path: path, Err: err})
				continue
			}
			l, err := s.take(lib, path)
			if err != nil {
				lib.Close()
				tried = append(tried, Attempt{Path: path, Err: err})
				continue
			}
			return l, tried
		}
	}
	return nil, tried
}

// take checks that lib is s's library (it exports s.Ident) and asks its
// version.
func (s *Spec) take(lib Library, path string) (*Opened, error) {
	for _, sym := range s.Ident {
		if _, ok := lib.Sym(sym); !ok {
			return nil, fmt.Errorf("no %s: not the %s library", sym, s.What)
		}
	}
	l := &Opened{Lib: lib, Path: path}
	if s.VersionKind == VersionNone {
		return l, nil
	}
	fn, ok := lib.Sym(s.Version)
	if !ok {
		return nil, fmt.Errorf("no %s: not the %s library", s.Version, s.What)
	}
	if err := askVersion(s.VersionKind, fn, l); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Version, err)
	}
	return l, nil
}

// errStatus is the error of a version call that returned a failed status.
type errStatus int32

func (e errStatus) Error() string { return fmt.Sprintf("failed with status %d", int32(e)) }

// ErrorText is the message of a package's LoadError: the library, every
// place tried with its reason, the Python sites searched, and how to
// point at the library.
func (s *Spec) ErrorText(f *Failure) string {
	var b strings.Builder
	if f.FromEnv {
		fmt.Fprintf(&b, "%s: cannot load the %s library that $%s names", s.Pkg, s.What, s.Env)
	} else {
		fmt.Fprintf(&b, "%s: cannot load the %s library", s.Pkg, s.What)
	}
	if len(f.Tried) > 0 {
		b.WriteString("; tried:")
		for _, a := range f.Tried {
			reason := "failed"
			if a.Err != nil && a.Err.Error() != "" {
				reason = a.Err.Error()
			}
			fmt.Fprintf(&b, "\n\t%s: %s", a.Path, reason)
		}
	}
	if len(f.Sites) > 0 {
		var pip []string
		for _, p := range s.Pip {
			pip = append(pip, "nvidia/"+p+"/lib")
		}
		fmt.Fprintf(&b, "\nlooked for pip's %s in:", strings.Join(pip, ", "))
		for _, site := range f.Sites {
			b.WriteString("\n\t" + site)
		}
	}
	name := ""
	if names := s.Names(); len(names) > 0 {
		name = " (" + names[0] + ")"
	}
	if f.FromEnv {
		fmt.Fprintf(&b, "\npoint %s at the %s library%s, or unset it to search the usual places", s.Env, s.What, name)
	} else {
		fmt.Fprintf(&b, "\n%s, or set %s to the library's path%s", s.Install, s.Env, name)
	}
	return b.String()
}

// SymbolText is the message of a package's SymbolError: symbol is not
// provided by the library opened at path, whose version (version, or
// major and minor, by s.VersionKind) the message gives.
func (s *Spec) SymbolText(symbol, path string, version, major, minor int) string {
	msg := s.Pkg + ": " + symbol + " is not provided by " + path
	switch s.VersionKind {
	case VersionMajorMinor:
		return msg + fmt.Sprintf(" (%s %d.%d)", s.What, major, minor)
	case VersionProperties:
		return msg + fmt.Sprintf(" (%s %d.%d.%d)", s.What, version/10000, version/100%100, version%100)
	case VersionInt, VersionReturn:
		return msg + fmt.Sprintf(" (%s version %d)", s.What, version)
	}
	if s.Driver {
		return msg + " (an older NVIDIA driver)"
	}
	return msg
}
