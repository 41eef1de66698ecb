package cuda_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// badPTX is PTX whose only function is never closed: the JIT refuses it.
const badPTX = `.version 8.0
.target sm_75
.address_size 64

.visible .entry broken(
	.param .u64 broken_param_0
)
{
	.reg .b64 	%rd<2>;
	ld.param.u64 	%rd1, [broken_param_0];
	ret;
`

// PTX the JIT refuses gives a *JITError with the JIT's error log, which
// matches CUDA_ERROR_INVALID_PTX.
func TestLoadModuleOfBadPTXGivesTheJITLog(t *testing.T) {
	f := newFixture(t)
	_, err := cuda.LoadModule(f.ctx, []byte(badPTX), cuda.OptimizationLevel(3))
	if !errors.Is(err, libcuda.CUDA_ERROR_INVALID_PTX) {
		t.Fatalf("bad PTX: %v, want CUDA_ERROR_INVALID_PTX", err)
	}
	var je *cuda.JITError
	if !errors.As(err, &je) {
		t.Fatalf("bad PTX: %T %v, want a *cuda.JITError", err, err)
	}
	if je.ErrorLog == "" || !strings.Contains(err.Error(), je.ErrorLog) || je.Call != "cuModuleLoadDataEx" {
		t.Errorf("the JIT error: call %q, log %q; error %q", je.Call, je.ErrorLog, err)
	}
	t.Logf("kernels-jitlog: %s", je.ErrorLog)
}

// The JIT options load the module they compile, and LoadModuleFile reads
// a file.
func TestLoadModuleWithOptionsAndFromAFile(t *testing.T) {
	f := newFixture(t)
	arch, err := f.ctx.Device().Arch()
	testenv.Must(t, err)
	mod, err := cuda.LoadModule(f.ctx, kernels.TypedPTX, cuda.OptimizationLevel(2), cuda.MaxRegisters(32),
		cuda.GenerateLineInfo(), cuda.Target(arch))
	testenv.Must(t, err)
	t.Logf("the JIT's info log: %q", mod.Log())
	if _, err := mod.Func("axpy"); err != nil {
		t.Error(err)
	}
	testenv.MustBounded(t, "mod.Close", mod.Close)
	path := filepath.Join(testenv.TempDir(t), "typed.ptx")
	testenv.Must(t, os.WriteFile(path, kernels.TypedPTX, 0o600))
	mod, err = cuda.LoadModuleFile(f.ctx, path)
	testenv.Must(t, err)
	if _, err := mod.Func("add_vecs"); err != nil {
		t.Error(err)
	}
	testenv.MustBounded(t, "mod.Close", mod.Close)
	if _, err := cuda.LoadModuleFile(f.ctx, filepath.Join(testenv.TempDir(t), "none.ptx")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
	for name, opt := range map[string]cuda.ModuleOption{
		"OptimizationLevel(5)": cuda.OptimizationLevel(5), "MaxRegisters(0)": cuda.MaxRegisters(0),
		"Target(gfx90a)": cuda.Target("gfx90a"), "nil": nil,
	} {
		if _, err := cuda.LoadModule(f.ctx, kernels.TypedPTX, opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
