package cublaslt

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The search follows $CUDA_PATH, conda and pip's nvidia/cu13/lib and
// nvidia/cublas/lib (where cuBLAS's wheels put cuBLASLt too), after the
// names through the loader.
func TestSearchPlacesFollowToolkitCondaAndPip(t *testing.T) { testenv.CheckSearch(t, search) }
