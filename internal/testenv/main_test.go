package testenv_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The cuBLAS stand-in is loaded too, for the test of the leak check.
func TestMain(m *testing.M) { testenv.MainBLAS(m) }
