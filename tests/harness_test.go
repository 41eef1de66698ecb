package tests

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv (and internal/testenv/memtest), whose
// helpers they call.

func TestMain(m *testing.M) {
	// No background unregister in flight when a test holds a stream.
	testenv.BeforeHold = func() { hostmem.Trim() }
	testenv.Main(m, testenv.Drain(hostmem.Drain))
}
