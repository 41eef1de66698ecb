package examples

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// samples are the directories of NVIDIA's samples written with package cuda.
var samples = []string{"vectoradd", "matrixmul", "simplestreams", "asyncapi", "simplezerocopy", "simplecudagraphs", "jacobi"}

const module = "github.com/purecuda/purecuda/"

// TestSamplesImportOnlyTheGoAPI checks that no sample reaches below package
// cuda: no unsafe, no libcuda, no purego.
func TestSamplesImportOnlyTheGoAPI(t *testing.T) {
	banned := map[string]bool{"unsafe": true, module + "libcuda": true, "github.com/ebitengine/purego": true, "C": true}
	for _, dir := range append(samples, "internal/sample", "jit", "fftconv", "backend") { // what they share, examples/jit, fftconv and backend
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no Go files", dir)
		}
		usesCuda := false
		for _, name := range files {
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				if banned[path] {
					t.Errorf("%s imports %s", name, path)
				}
				usesCuda = usesCuda || path == module+"cuda"
			}
		}
		if !usesCuda {
			t.Errorf("%s: no file imports package cuda", dir)
		}
	}
}

var (
	kernelDecl = regexp.MustCompile(`extern "C" __global__ void (\w+)\(`)
	ptxEntry   = regexp.MustCompile(`\.entry (\w+)\(`)
)

// TestSamplesKernelsMatch checks that each sample's kernels.ptx declares
// exactly the kernels of its kernels.cu (so that it was made from it), and
// that main.go and baseline.c both ask for each of them by name.
func TestSamplesKernelsMatch(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	names := func(re *regexp.Regexp, s string) map[string]bool {
		m := map[string]bool{}
		for _, sub := range re.FindAllStringSubmatch(s, -1) {
			m[sub[1]] = true
		}
		return m
	}
	for _, dir := range samples {
		cu := names(kernelDecl, read(filepath.Join(dir, "kernels.cu")))
		ptx := names(ptxEntry, read(filepath.Join(dir, "kernels.ptx")))
		if len(cu) == 0 {
			t.Errorf("%s/kernels.cu declares no extern \"C\" kernel", dir)
		}
		for k := range cu {
			if !ptx[k] {
				t.Errorf("%s: kernel %s is not in kernels.ptx", dir, k)
			}
		}
		for k := range ptx {
			if !cu[k] {
				t.Errorf("%s: kernels.ptx has %s, which kernels.cu does not declare", dir, k)
			}
		}
		goSrc, cSrc := read(filepath.Join(dir, "main.go")), read(filepath.Join(dir, "baseline.c"))
		for k := range cu {
			if !strings.Contains(goSrc, strconv.Quote(k)) {
				t.Errorf("%s/main.go does not load kernel %s", dir, k)
			}
			if !strings.Contains(cSrc, strconv.Quote(k)) {
				t.Errorf("%s/baseline.c does not load kernel %s", dir, k)
			}
		}
	}
}

// TestReadmeQuickstartIsTheQuickstartProgram checks that the README's
// quickstart is examples/quickstart/main.go as it stands (less the
// file's doc comment), so the snippet builds and runs as printed.
func TestReadmeQuickstartIsTheQuickstartProgram(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	code := string(prog)
	i := strings.Index(code, "package main\n")
	if i < 0 {
		t.Fatal("quickstart/main.go has no package main")
	}
	if !strings.Contains(string(readme), "```go\n"+code[i:]+"```\n") {
		t.Error("the README's quickstart is not examples/quickstart/main.go: copy the file into it")
	}
}
