package tests

import (
	"testing"

	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
)

// kernels loads the test kernels into the current context.
func loadKernels(t testing.TB) libcuda.Module {
	t.Helper()
	m, err := libcuda.LoadModule(kernels.PTX)
	if err != nil {
		t.Fatalf("loading the test kernels: %v", err)
	}
	t.Cleanup(func() {
		if err := libcuda.ModuleUnload(m); err != nil {
			t.Errorf("cuModuleUnload: %v", err)
		}
	})
	return m
}

func kernel(t testing.TB, m libcuda.Module, name string) libcuda.Func {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
