package dl

import (
	"fmt"
	"os"
	"path/filepath"
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

// Search says where and how to look for one of NVIDIA's libraries, as
// DESIGN.md's decision 15 lays out: an environment variable that overrides
// everything, the names through the system's loader, a CUDA toolkit's
// folders, $CUDA_PATH, conda's $CONDA_PREFIX/lib and the nvidia/*/lib
// folders of pip's packages (Linux), or %CUDA_PATH%\bin\x64, %CUDA_PATH%\bin
// and the DLL search path (Windows).
type Search struct {
	Pkg     string   // the Go package, for error messages: "cublas"
	What    string   // the library, for error messages: "cuBLAS"
	Env     string   // the variable that names the file: "PURECUDA_LIBCUBLAS"
	Names   []string // this system's file names, newest first: "libcublas.so.13"
	Pip     []string // folders under site-packages/nvidia holding lib/: "cu13", "cublas"
	Install string   // how to install it, for the error: "pip install nvidia-cublas"
}

// Attempt is one place a Search looked.
type Attempt struct {
	Path string
	Err  error
}

// LoadError reports that no library could be loaded: it names every
// place tried and says how to point at the library.
type LoadError struct {
	Search  *Search
	Tried   []Attempt
	FromEnv bool  // the one place tried was the variable's
	Is_     error // the package's sentinel that errors.Is matches
}

func (e *LoadError) Error() string {
	s := e.Search
	if s == nil {
		s = &Search{Pkg: "dl", What: "the library"}
	}
	var b strings.Builder
	if e.FromEnv {
		fmt.Fprintf(&b, "%s: cannot load the %s library that $%s names", s.Pkg, s.What, s.Env)
	} else {
		fmt.Fprintf(&b, "%s: cannot load the %s library", s.Pkg, s.What)
	}
	if len(e.Tried) > 0 {
		b.WriteString("; tried:")
		for _, a := range e.Tried {
			fmt.Fprintf(&b, "\n\t%s: %v", a.Path, a.Err)
		}
	}
	name := ""
	if len(s.Names) > 0 {
		name = " (" + s.Names[0] + ")"
	}
	if e.FromEnv {
		fmt.Fprintf(&b, "\npoint %s at %s%s, or unset it to search the usual places", s.Env, s.What, name)
	} else {
		fmt.Fprintf(&b, "\ninstall %s (%s) or set %s to its path%s", s.What, s.Install, s.Env, name)
	}
	return b.String()
}

// Is reports whether target is the package's sentinel error.
func (e *LoadError) Is(target error) bool { return e.Is_ != nil && target == e.Is_ }

// Open finds and opens the library: with the variable s.Env set (read
// through getenv), that file or none; otherwise the first of s.Places
// that opens and that accept takes (accept checks that the library is the
// one wanted, and returns what the package keeps of it; on an error the
// library is closed and the search goes on). A failure is a *LoadError
// whose Is matches sentinel.
func Open[T any](s *Search, getenv func(string) string, sentinel error, accept func(lib Library, path string) (T, error)) (T, error) {
	if p := getenv(s.Env); p != "" {
		v, tried, ok := openFirst(s, []string{p}, accept)
		if !ok {
			return v, &LoadError{Search: s, Tried: tried, FromEnv: true, Is_: sentinel}
		}
		return v, nil
	}
	v, tried, ok := openFirst(s, s.Places(getenv), accept)
	if !ok {
		return v, &LoadError{Search: s, Tried: tried, Is_: sentinel}
	}
	return v, nil
}

// OpenFirst opens the first of places that holds the library, as Open
// does after the variable; it returns every attempt when none does.
func OpenFirst[T any](s *Search, places []string, accept func(lib Library, path string) (T, error)) (T, []Attempt, bool) {
	return openFirst(s, places, accept)
}

// openFirst opens the first place that holds the library. A place is a
// library file, a name for the system's loader, or a folder in which
// s.Names are looked for.
func openFirst[T any](s *Search, places []string, accept func(lib Library, path string) (T, error)) (T, []Attempt, bool) {
	var tried []Attempt
	var zero T
	for _, place := range places {
		paths := []string{place}
		if st, err := os.Stat(place); filepath.IsAbs(place) && err == nil && st.IsDir() {
			paths = nil
			for _, name := range s.Names {
				if _, err := os.Stat(filepath.Join(place, name)); err == nil {
					paths = append(paths, filepath.Join(place, name))
				}
			}
			if len(paths) == 0 {
				tried = append(tried, Attempt{Path: place, Err: fmt.Errorf("no %s there", strings.Join(s.Names, ", "))})
				continue
			}
		}
		for _, path := range paths {
			lib, err := OpenLibrary(path)
			if err != nil {
				tried = append(tried, Attempt{Path: path, Err: err})
				continue
			}
			v, err := accept(lib, path)
			if err != nil {
				lib.Close()
				tried = append(tried, Attempt{Path: path, Err: err})
				continue
			}
			return v, tried, true
		}
	}
	return zero, tried, false
}

// errNoSymbol is an accept's error for a library without the symbol
// that identifies it.
func errNoSymbol(sym, what string) error {
	return fmt.Errorf("no %s: not %s", sym, what)
}

// HasSymbol is an accept check: an error unless lib exports sym, the
// function that identifies the library (nvrtcVersion, cublasCreate_v2).
func HasSymbol(lib Library, sym, what string) (uintptr, error) {
	a, ok := lib.Sym(sym)
	if !ok {
		return 0, errNoSymbol(sym, what)
	}
	return a, nil
}
