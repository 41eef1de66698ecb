package cublaslt

import (
	"testing"
	"unsafe"
)

// The structs cuBLASLt reads and writes have cublasLt.h's layouts on the
// 64-bit systems: sizes and offsets as the header's members give them
// (uint64_t data[8] and data[32]; the heuristic result's algo, size_t
// workspaceSize, cublasStatus_t state, float wavesCount, int reserved[4]).
// (TestLayoutMatchesC checks them with a C program where the toolkit's
// crt/ headers are; this test runs everywhere.)
func TestStructLayoutsAreCublasLts(t *testing.T) {
	var r MatmulHeuristicResult
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(cublasLtMatmulAlgo_t)", unsafe.Sizeof(MatmulAlgo{}), 64},
		{"sizeof(cublasLtMatrixLayoutOpaque_t)", unsafe.Sizeof(MatrixLayoutOpaque{}), 64},
		{"sizeof(cublasLtMatmulDescOpaque_t)", unsafe.Sizeof(MatmulDescOpaque{}), 256},
		{"sizeof(cublasLtMatmulPreferenceOpaque_t)", unsafe.Sizeof(MatmulPreferenceOpaque{}), 64},
		{"sizeof(cublasLtMatmulHeuristicResult_t)", unsafe.Sizeof(r), 96},
		{"offsetof(workspaceSize)", unsafe.Offsetof(r.WorkspaceSize), 64},
		{"offsetof(state)", unsafe.Offsetof(r.State), 72},
		{"offsetof(wavesCount)", unsafe.Offsetof(r.WavesCount), 76},
		{"offsetof(reserved)", unsafe.Offsetof(r.Reserved), 80},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d in Go, %d in C", c.what, c.got, c.want)
		}
	}
}
