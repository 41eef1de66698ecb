package libcuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
)

// The tests and examples of libcuda run against the simulator (default) or
// the real driver (-tags gpu), loaded by internal/testenv; the tests of
// package libcuda itself (call, layout, load, result) run in the same
// binary.

func TestMain(m *testing.M) { testenv.Main(m) }
