package main

import (
	"fmt"
	"regexp"
	"strings"
)

// library is one NVIDIA library the generator serves: where its
// declarations come from, what its files are called, and the Go package
// that binds it.
type library struct {
	pkg     string   // Go package, and its folder under the module root
	headers []string // read in order; the first declares the types and functions
	files   []string // the library files the package loads, for the doc comments
	result  string   // the C status type the entry points return
	// typePrefix matches the C type names whose Go name drops a prefix;
	// its group 1 is the rest, which becomes the Go name.
	typePrefix *regexp.Regexp
	funcPrefix string // dropped from function names: cuMemAlloc -> MemAlloc
	// byVersion: entry points are resolved through cuGetProcAddress by
	// base name and the ABI version of their PFN typedef in the second
	// header; otherwise they are looked up by their symbol's name.
	byVersion bool
	layout    bool // write zlayout_test.go, the table its layout test checks
	// rename gives the Go name of an entry point whose mechanical name
	// the package's hand-written API uses for something friendlier.
	rename map[string]string
}

// libraries drives the generator: one entry per generated package.
var libraries = []*library{
	{
		pkg:        "libcuda",
		headers:    []string{"cuda.h", "cudaTypedefs.h"},
		files:      []string{"libcuda.so.1", "nvcuda.dll"},
		result:     "CUresult",
		typePrefix: regexp.MustCompile(`^CU([a-z].*)$`),
		funcPrefix: "cu",
		byVersion:  true,
		layout:     true,
	},
	{
		pkg:        "nvrtc",
		headers:    []string{"nvrtc.h"},
		files:      []string{"libnvrtc.so.13", "nvrtc64_130_0.dll"},
		result:     "nvrtcResult",
		typePrefix: regexp.MustCompile(`^nvrtc([A-Z].*)$`),
		funcPrefix: "nvrtc",
		rename:     map[string]string{"nvrtcVersion": "GetVersion"},
	},
}

// libraryNamed finds a library of the table by its package name.
func libraryNamed(pkg string) (*library, error) {
	var names []string
	for _, l := range libraries {
		if l.pkg == pkg {
			return l, nil
		}
		names = append(names, l.pkg)
	}
	return nil, fmt.Errorf("no library %q; the generator knows %s", pkg, strings.Join(names, ", "))
}

// goName is the Go name of a C type name: with libcuda's prefix CUstream
// -> Stream, with nvrtc's nvrtcProgram -> Program; CUDA_* and other names
// keep their spelling.
func (l *library) goName(c string) string {
	if m := l.typePrefix.FindStringSubmatch(c); m != nil {
		return exported(m[1])
	}
	return c
}

// funcName is the Go name of a function symbol without its version
// suffix handling: the prefix dropped, the first letter upper case.
func (l *library) funcName(symbol string) string {
	if n, ok := l.rename[symbol]; ok {
		return n
	}
	name := strings.TrimPrefix(symbol, l.funcPrefix)
	if name == "" { // the symbol is the prefix alone, as "cu"
		name = symbol
	}
	return exported(name)
}

// header is the name of the header that declares the functions.
func (l *library) header() string { return l.headers[0] }
