package cuda_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Two PTX modules linked by the driver's linker load as one: the kernels
// of both are there.
func TestLinkerLinksPTXIntoOneModule(t *testing.T) {
	f := newFixture(t)
	var l cuda.Linker
	testenv.Must(t, l.AddPTX("kernels.ptx", kernels.PTX))
	testenv.Must(t, l.AddPTX("typed.ptx", kernels.TypedPTX))
	image, err := l.Link(f.ctx, cuda.OptimizationLevel(3))
	testenv.Must(t, err)
	mod, err := cuda.LoadModule(f.ctx, image)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.MustBounded(t, "mod.Close", mod.Close) })
	axpy, err := mod.Func("axpy")
	testenv.Must(t, err)
	if _, err := mod.Func("saxpy"); err != nil {
		t.Errorf("the first input's saxpy: %v", err)
	}
	x := alloc(t, f.s, []float32{1, 2})
	y := alloc(t, f.s, []float32{1, 1})
	testenv.Must(t, f.s.Launch(axpy, cuda.Grid(1, 1, 1), cuda.Block(32, 1, 1), cuda.Float32(2), x.Arg(), y.Arg(), cuda.Int32(2)))
	if got := read(t, f.s, y); !slices.Equal(got, []float32{3, 5}) {
		t.Errorf("got %v, want [3 5]", got)
	}
}

// Bad PTX is refused by the linker with its log; bad input before it.
func TestLinkerRefusesBadPTXWithTheLog(t *testing.T) {
	f := newFixture(t)
	var l cuda.Linker
	testenv.Must(t, l.AddPTX("typed.ptx", kernels.TypedPTX))
	testenv.Must(t, l.AddPTX("bad.ptx", []byte(badPTX)))
	_, err := l.Link(f.ctx)
	var je *cuda.JITError
	if !errors.As(err, &je) || !errors.Is(err, libcuda.CUDA_ERROR_INVALID_PTX) || je.ErrorLog == "" || !strings.Contains(je.Call, "bad.ptx") {
		t.Fatalf("linking bad PTX: %v, want a JITError for bad.ptx with a log, matching CUDA_ERROR_INVALID_PTX", err)
	}
	t.Logf("kernels-linklog: %s", je.ErrorLog)
	var empty cuda.Linker
	if _, err := empty.Link(f.ctx); err == nil {
		t.Error("linking nothing: no error")
	}
	if err := empty.AddCubin("none", nil); err == nil {
		t.Error("an empty cubin: no error")
	}
	if err := empty.AddFatbin("a\x00b", []byte{1}); err == nil {
		t.Error("a name with a NUL: no error")
	}
}
