// Command gen writes the generated files of package libcuda from the CUDA
// headers cuda.h and cudaTypedefs.h:
//
//	zapi.go          one wrapper per driver entry point and its proc
//	ztypes.go        handles, scalar typedefs, structs, unions, function pointers
//	zconst.go        enums with String methods, #define constants
//	zlayout_test.go  the table TestLayoutMatchesC checks against the C compiler
//
// Usage:
//
//	go run ./tools/gen [-include DIR] [-check] [-v]
//
// DIR holds cuda.h and cudaTypedefs.h; it defaults to $CUDA_PATH/include,
// else /usr/local/cuda/include. The files go to libcuda/ under the module
// root, found by walking up from the working directory to go.mod. With
// -check nothing is written: gen fails, naming the files, if the files on
// disk differ from what it would write. With -v it prints what it generated.
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
	include := flag.String("include", defaultInclude(), "`dir`ectory holding cuda.h and cudaTypedefs.h")
	check := flag.Bool("check", false, "only check that the files on disk are up to date")
	verbose := flag.Bool("v", false, "print what was generated")
	flag.Parse()
	if err := run(*include, *check, *verbose); err != nil {
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

func run(include string, check, verbose bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	h, err := readHeaders(include)
	if err != nil {
		return err
	}
	files, stats, err := generate(h)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "libcuda")
	if check {
		return checkFiles(dir, files)
	}
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	if verbose {
		fmt.Println(stats)
	}
	return nil
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

// readHeaders preprocesses and parses cuda.h, then cudaTypedefs.h.
func readHeaders(include string) (*header, error) {
	pp := newPreprocessor()
	var cudaH string
	for _, name := range []string{"cuda.h", "cudaTypedefs.h"} {
		path := filepath.Join(include, name)
		src, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no %s in %s: point -include or CUDA_PATH at a CUDA toolkit", name, include)
		}
		if err != nil {
			return nil, err
		}
		if name == "cuda.h" {
			cudaH = path
		}
		if err := pp.run(path, string(src), name == "cuda.h"); err != nil {
			return nil, err
		}
	}
	h := newHeader()
	h.defines = pp.defines
	p := &parser{toks: pp.out, h: h, types: cudaH}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return h, nil
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

// checkFiles fails, naming them, if files differ from those in dir.
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
		return fmt.Errorf("out of date, run go generate ./libcuda: %s", strings.Join(stale, ", "))
	}
	return nil
}
