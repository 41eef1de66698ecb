package cublas_test

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.MainBLAS(m, testenv.Drain(hostmem.Drain))
}
