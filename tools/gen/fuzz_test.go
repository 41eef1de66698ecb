package main

import (
	goparser "go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzHeaders runs the generator over mutations of the fixture headers: it
// returns an error or Go files that parse, and never panics.
func FuzzHeaders(f *testing.F) {
	fixtureCuda, err := os.ReadFile("testdata/include/cuda.h")
	if err != nil {
		f.Fatal(err)
	}
	fixtureTypedefs, err := os.ReadFile("testdata/include/cudaTypedefs.h")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(fixtureCuda), string(fixtureTypedefs))
	const prelude = "#define CUDA_VERSION 13000\ntypedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;\n"
	f.Add(prelude+"typedef struct { int a; long long b; } CUpair;\nCUresult cuFoo(CUpair *p, unsigned int n);\n",
		"typedef CUresult (*PFN_cuFoo_v1000)(CUpair *p, unsigned int n);\n")
	f.Add(prelude+"#define X(a) a\n#if X(1) + 2 * 3\nenum { A = 1 << 3, B = A | 4 };\n#endif\n", "")
	dir := f.TempDir() // one per fuzzing process, whose runs are sequential
	f.Fuzz(func(t *testing.T, cudaH, typedefsH string) {
		if len(cudaH)+len(typedefsH) > 64<<10 {
			return
		}
		var (
			files generated
			err   error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			var h *header
			if h, err = readSources(dir, cudaH, typedefsH); err == nil {
				files, _, err = generate(h)
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the generator runs for more than 5s on these headers (a loop?)")
		}
		if err != nil && cudaH == string(fixtureCuda) && typedefsH == string(fixtureTypedefs) {
			t.Fatalf("the fixture headers do not generate: %v", err)
		}
		if err != nil {
			for _, name := range []string{"zapi.go", "ztypes.go", "zconst.go", "zlayout_test.go"} {
				if strings.HasPrefix(err.Error(), name+":") {
					t.Fatalf("the generator wrote Go that does not parse: %v", err)
				}
			}
			return
		}
		for name, src := range files {
			if _, err := goparser.ParseFile(gotoken.NewFileSet(), name, src, goparser.AllErrors); err != nil {
				t.Fatalf("%s does not parse: %v", name, err)
			}
		}
	})
}

// readSources writes the two headers into dir and reads them as the
// generator reads a toolkit's.
func readSources(dir, cudaH, typedefsH string) (*header, error) {
	for name, src := range map[string]string{"cuda.h": cudaH, "cudaTypedefs.h": typedefsH} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o666); err != nil {
			return nil, err
		}
	}
	return readHeaders(dir)
}
