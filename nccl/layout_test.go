package nccl

import (
	"os"
	"testing"

	"github.com/purecuda/purecuda/internal/layoutcheck"
)

// The generated table (zlayout_test.go) is written in these names.
type (
	layoutType  = layoutcheck.Type
	layoutField = layoutcheck.Field
)

// TestLayoutMatchesC builds a C program against nccl.h that prints
// sizeof, _Alignof and offsetof for ncclUniqueId, ncclConfig_t and
// ncclSimInfo_t and each of their members, runs it and compares each
// number with Go's. nccl.h includes cuda_runtime.h (for cudaStream_t) and
// cuda_fp16.h, which needs the toolkit's CCCL headers: stubs stand in for
// them, declaring cudaStream_t alone. In CI (PURECUDA_REQUIRE_SIM=1 and
// CUDA_PATH set) a missing header or C compiler is a failure.
func TestLayoutMatchesC(t *testing.T) {
	layoutcheck.Check(t, layoutcheck.Program{
		Header:  "nccl.h",
		Version: "NCCL_VERSION_CODE",
		Want:    NCCL_VERSION_CODE,
		Stubs: map[string]string{
			"cuda_runtime.h": "#define CUDART_VERSION 13000\ntypedef struct CUstream_st *cudaStream_t;\n",
			"cuda_fp16.h":    "",
			"cuda_bf16.h":    "",
		},
		Required: os.Getenv("PURECUDA_REQUIRE_SIM") == "1" && os.Getenv("CUDA_PATH") != "",
	}, layoutTypes[:])
}
