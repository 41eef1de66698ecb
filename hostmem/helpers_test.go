package hostmem_test

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv (and internal/testenv/memtest), whose
// helpers they call.

func TestMain(m *testing.M) { testenv.Main(m, testenv.Drain(hostmem.Drain)) }
