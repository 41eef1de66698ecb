package main

import (
	goparser "go/parser"
	gotoken "go/token"
	"os"
	"strings"
	"testing"
	"time"
)

// parseSources preprocesses and parses the two headers as readHeaders does
// with files.
func parseSources(cudaH, typedefsH string) (*header, error) {
	pp := newPreprocessor()
	if err := pp.run("cuda.h", cudaH, true); err != nil {
		return nil, err
	}
	if err := pp.run("cudaTypedefs.h", typedefsH, false); err != nil {
		return nil, err
	}
	h := newHeader()
	h.defines = pp.defines
	p := &parser{toks: pp.out, h: h, types: "cuda.h"}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return h, nil
}

// FuzzHeaders runs the generator over mutations of the fixture headers: it
// returns an error or Go files that parse, and never panics.
func FuzzHeaders(f *testing.F) {
	cudaH, err := os.ReadFile("testdata/include/cuda.h")
	if err != nil {
		f.Fatal(err)
	}
	typedefsH, err := os.ReadFile("testdata/include/cudaTypedefs.h")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(cudaH), string(typedefsH))
	const prelude = "#define CUDA_VERSION 13000\ntypedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;\n"
	f.Add(prelude+"typedef struct { int a; long long b; } CUpair;\nCUresult cuFoo(CUpair *p, unsigned int n);\n",
		"typedef CUresult (*PFN_cuFoo_v1000)(CUpair *p, unsigned int n);\n")
	f.Add(prelude+"#define X(a) a\n#if X(1) + 2 * 3\nenum { A = 1 << 3, B = A | 4 };\n#endif\n", "")
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
			if h, err = parseSources(cudaH, typedefsH); err == nil {
				files, _, err = generate(h)
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the generator runs for more than 5s on these headers (a loop?)")
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
