package cublaslt

import (
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/internal/layoutcheck"
)

// The generated table (zlayout_test.go) is written in these names.
type (
	layoutType  = layoutcheck.Type
	layoutField = layoutcheck.Field
)

// TestLayoutMatchesC builds a C program against cublasLt.h that prints
// sizeof, _Alignof and offsetof for every generated struct and member,
// runs it and compares each number with Go's. cublasLt.h reaches
// cuda_fp16.h, which needs the toolkit's crt/ and nv/ headers: the
// generator's header folder lacks nv/, so the test runs where a toolkit
// is ($CUDA_PATH/include; on the GPU host $PURECUDA_CUBLAS_INCLUDE, set by
// .ci/gpu-batch to the pip packages' include folder; then
// /usr/local/cuda/include) and must run in the gpu build.
func TestLayoutMatchesC(t *testing.T) {
	layoutcheck.Check(t, layoutcheck.Program{
		Header:   "cublasLt.h",
		Needs:    []string{"crt/host_defines.h", "nv/target"},
		Env:      []string{"PURECUDA_CUBLAS_INCLUDE"},
		Version:  "CUBLAS_VERSION",
		Want:     cublas.CUBLAS_VERSION,
		Required: layoutRequired,
	}, layoutTypes[:])
}
