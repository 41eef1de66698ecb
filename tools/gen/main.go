// Command gen writes the generated files of the packages that bind NVIDIA
// libraries, from the library's C headers. A table (library.go) says, for
// each library, which headers declare it, how its library file is found
// and told apart (environment variable, file names per system, pip
// folders, identifying symbols, version call), and which Go package binds
// it:
//
//	libcuda   cuda.h, cudaTypedefs.h     libcuda.so.1, nvcuda.dll
//	nvrtc     nvrtc.h                    libnvrtc.so.13, nvrtc64_130_0.dll
//	nvjitlink nvJitLink.h                libnvJitLink.so.13, nvJitLink_130_0.dll
//	nvml      nvml.h                     libnvidia-ml.so.1, nvml.dll
//	libtypes  library_types.h            (types only, shared by the next two)
//	cublas    cublas_api.h, cublas_v2.h  libcublas.so.13, cublas64_13.dll
//	cublaslt  cublasLt.h                 libcublasLt.so.13, cublasLt64_13.dll
//	curand    curand.h                   libcurand.so.10, curand64_10.dll
//	cufft     cufft.h                    libcufft.so.12, cufft64_12.dll
//	internal/calltest  c/calltest.h      (the call-path fixture, built by its tests)
//	nccl      nccl.h                     libnccl.so.2 (Linux only)
//
// A library may use the types of those before it (cublas uses libtypes's,
// cublaslt those of libtypes and cublas): their headers are read first,
// and their types are spelled with the other package's names. Types from
// headers the generator does not read (driver_types.h's cudaStream_t,
// cuda_fp16.h's __half) come from a row's prelude, with their Go types
// (libcuda.Stream, cuda.Half).
//
// Each package gets
//
//	zapi.go          one wrapper per entry point and its proc (not for libtypes)
//	zload.go         (not for libtypes) the loader: EnvLibrary, ErrNoLibrary
//	                 (libcuda: ErrNoDriver), ErrSymbol, Load, LoadError, Attempt
//	                 and, for the libraries resolved by name, Library, Loaded and
//	                 SymbolError, on internal/dl's Open and Lazy
//	ztypes.go        handles, scalar typedefs, structs, unions, function pointers
//	zconst.go        enums with String methods, #define constants
//	zproc.go         the call frame, and (the libraries resolved by symbol name, all
//	                 but libcuda, whose proc.go uses cuGetProcAddress_v2) the proc
//	                 each wrapper holds, resolved through the package's dl.Lazy
//	zcall*.go        call: internal/dl's trampoline, or a stub where it does not
//	                 run; libcuda's also callPinned, callQueued, callFence, and,
//	                 where an entry point takes float or double arguments by
//	                 value, callFloat (internal/dl.CallFloat)
//	zresult.go       the status type as an error: Error, Description (the library's
//	                 text, where it has one), every value boxed once (not for
//	                 libtypes, nor cublaslt, whose status is cublas's)
//	zlayout_test.go  (libcuda, nvml, cublaslt, nccl) the table TestLayoutMatchesC checks against the C compiler
//	zlong_*.go       (nvml) CLong and CULong, C's long on Windows and elsewhere
//
// and every run writes internal/dl/zlibraries.go, the loader columns of
// every row (dl.Libraries), which the zload.go files and internal/dl's
// tests read.
//
// Usage:
//
//	go run ./tools/gen [-include DIR] [-lib PKG] [-check] [-v]
//
// DIR holds the headers; it defaults to $CUDA_PATH/include, else
// /usr/local/cuda/include. The CUDA version in the generated files' first
// lines is cuda.h's CUDA_VERSION. -lib limits the run to one package
// (libcuda, nvrtc, nvml); without it every package of the table is generated.
// The files go to the package's folder under the module root, found by
// walking up from the working directory to go.mod. With -check nothing is
// written: gen fails, naming the files, if the files on disk differ from
// what it would write. With -v it prints what it generated.
//
// The headers are read the way a 64-bit GNU C11 compiler reads them with
// no extra macros defined: the default _v2/_v3 names and no per-thread
// default stream variants.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	include := flag.String("include", defaultInclude(), "`dir`ectory holding the CUDA headers (cuda.h, cudaTypedefs.h, nvrtc.h, ...)")
	lib := flag.String("lib", "", "generate only this `package` (libcuda, nvrtc, ...); all when empty")
	check := flag.Bool("check", false, "only check that the files on disk are up to date")
	verbose := flag.Bool("v", false, "print what was generated")
	flag.Parse()
	if err := run(*include, *lib, *check, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func defaultInclude() string {
	if p := os.Getenv("CUDA_PATH"); p != "" {
		return filepath.Join(p, "include")
	}
	return "/usr/local/cuda/include"
}

func run(include, only string, check, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	libs := libraries
	if only != "" {
		l, err := libraryNamed(only)
		if err != nil {
			return err
		}
		libs = []*library{l}
	}
	var errs []error
	for _, l := range libs {
		h, err := readLibrary(include, l)
		if err != nil {
			return err
		}
		files, stats, err := generate(h)
		if err != nil {
			return err
		}
		if len(stats.unlisted) > 0 {
			return fmt.Errorf("%s: %s, listed as pinned, queued or fences, are no entry points of %s", l.pkg, strings.Join(stats.unlisted, ", "), l.header())
		}
		dir := filepath.Join(root, l.pkg)
		if check {
			errs = append(errs, checkFiles(dir, files))
			continue
		}
		if err := writeFiles(dir, files); err != nil {
			return err
		}
		if verbose {
			fmt.Printf("%s: %s\n", l.pkg, stats)
		}
	}
	table, err := tableFile()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, tableDir)
	if check {
		errs = append(errs, checkFiles(dir, generated{tableName: table}))
	} else if err := writeFiles(dir, generated{tableName: table}); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// moduleRoot walks up from the working directory to the folder holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// readHeaders reads libcuda's headers, cuda.h and cudaTypedefs.h.
func readHeaders(include string) (*header, error) { return readLibrary(include, libraries[0]) }

// readLibrary preprocesses and parses the headers of l in order (for
// libcuda cuda.h, then cudaTypedefs.h), and reads the CUDA version from
// cuda.h. The headers of the libraries l uses, and l's prelude, are read
// first: their types are known, spelled as their packages name them, and
// not declared again.
func readLibrary(include string, l *library) (*header, error) {
	pp := newPreprocessor()
	h := newHeader()
	h.lib = l
	if err := readForeign(include, l, pp, h); err != nil {
		return nil, err
	}
	pp.out = nil
	var first string
	own := include
	if l.local != "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		own = filepath.Join(root, filepath.FromSlash(l.local))
	}
	for i, name := range l.headers {
		path := filepath.Join(own, name)
		src, err := readHeader(own, name)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = path
		}
		if err := pp.run(path, src, i == 0); err != nil {
			return nil, err
		}
	}
	h.defines = pp.defines
	p := &parser{toks: pp.out, h: h, types: first, result: l.result, skip: l.skip, skipPre: l.skipPrefix}
	if err := p.parse(); err != nil {
		return nil, err
	}
	defines := pp.defines
	if l.header() != "cuda.h" {
		var err error
		if defines, err = cudaDefines(include); err != nil {
			return nil, err
		}
	}
	var err error
	if h.version, err = cudaVersion(defines); err != nil {
		return nil, err
	}
	return h, nil
}

// readForeign reads into h the types of the libraries l uses and of l's
// prelude, and names each as l's Go code spells it (h.foreign). It leaves
// h without declarations and functions of its own.
func readForeign(include string, l *library, pp *preprocessor, h *header) error {
	if len(l.uses) == 0 && l.prelude == "" {
		return nil
	}
	for _, name := range l.uses {
		u, err := libraryNamed(name)
		if err != nil {
			return err
		}
		uh, err := readLibrary(include, u)
		if err != nil {
			return fmt.Errorf("%s uses %s: %w", l.pkg, name, err)
		}
		names, err := exportedTypes(uh)
		if err != nil {
			return fmt.Errorf("%s uses %s: %w", l.pkg, name, err)
		}
		for c, goName := range names {
			if _, ok := h.foreign[c]; !ok {
				h.foreign[c] = goName
			}
		}
		if err := pp.run("prelude of "+u.pkg, u.prelude, false); err != nil {
			return err
		}
		for _, hdr := range u.headers {
			src, err := readHeader(include, hdr)
			if err != nil {
				return err
			}
			if err := pp.run(filepath.Join(include, hdr), src, false); err != nil {
				return err
			}
		}
	}
	prelude := "prelude of " + l.pkg
	if err := pp.run(prelude, l.prelude, false); err != nil {
		return err
	}
	// Parsed as one file; only the types are kept.
	for i := range pp.out {
		pp.out[i].pos.file = prelude
	}
	p := &parser{toks: pp.out, h: h, types: prelude, result: "", foreign: true}
	if err := p.parse(); err != nil {
		return err
	}
	for name := range h.typedefs {
		if _, ok := h.foreign[name]; ok {
			continue
		}
		goType, ok := l.extern[name]
		if !ok {
			return fmt.Errorf("%s: the prelude's type %s has no Go type in extern", l.pkg, name)
		}
		h.foreign[name] = goType
	}
	h.decls, h.funcs, h.funcBy = nil, nil, map[string]*function{}
	return nil
}

// exportedTypes names every typedef of h as a package importing h's
// package spells it: libtypes.DataType, uint32 for a <stdint.h>-style
// name, what h itself takes from elsewhere as it is.
func exportedTypes(h *header) (names map[string]string, err error) {
	defer catch(&err)
	g := newGen(h)
	g.names()
	names = map[string]string{}
	for name := range h.typedefs {
		if f, ok := h.foreign[name]; ok {
			names[name] = f
			continue
		}
		goName := g.typeName(&ctype{kind: kNamed, name: name})
		if _, builtin := goBuiltins[goName]; !builtin {
			goName = h.lib.pkg + "." + goName
		}
		names[name] = goName
	}
	return names, nil
}

// goBuiltins are Go's predeclared types a C type can become.
var goBuiltins = map[string]bool{"byte": true, "int8": true, "uint8": true, "int16": true, "uint16": true,
	"int32": true, "uint32": true, "int64": true, "uint64": true, "float32": true, "float64": true,
	"uintptr": true, "complex64": true, "complex128": true}

// readHeader reads one header of the include folder.
func readHeader(include, name string) (string, error) {
	src, err := os.ReadFile(filepath.Join(include, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no %s in %s: point -include or CUDA_PATH at a CUDA toolkit", name, include)
	}
	return string(src), err
}

// cudaVersion gives CUDA_VERSION, "13.0" for 13000, from the #defines of
// cuda.h.
func cudaVersion(defines []define) (string, error) {
	for _, d := range defines {
		if d.name == "CUDA_VERSION" && len(d.expanded) == 1 {
			if v, err := parseInt(d.expanded[0].text); err == nil {
				return fmt.Sprintf("%d.%d", v/1000, v%1000/10), nil
			}
		}
	}
	return "", errors.New("cuda.h does not define CUDA_VERSION")
}

// cudaDefines are the #defines of cuda.h in include, for the version of a
// library whose own headers do not say it.
func cudaDefines(include string) ([]define, error) {
	src, err := readHeader(include, "cuda.h")
	if err != nil {
		return nil, err
	}
	pp := newPreprocessor()
	if err := pp.run(filepath.Join(include, "cuda.h"), src, true); err != nil {
		return nil, err
	}
	return pp.defines, nil
}

// writeFiles writes files into dir.
func writeFiles(dir string, files generated) error {
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// checkFiles fails, naming them, if files differ from those in dir, the
// folder of the package.
func checkFiles(dir string, files generated) error {
	var stale []string
	for name, src := range files {
		old, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(old, src) {
			stale = append(stale, filepath.Join(dir, name))
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return fmt.Errorf("out of date, run go generate ./%s: %s", filepath.Base(dir), strings.Join(stale, ", "))
	}
	return nil
}
