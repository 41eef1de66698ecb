package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

func TestMain(m *testing.M) {
	// No background unregister in flight when a test holds a stream.
	testenv.BeforeHold = func() { hostmem.Trim() }
	testenv.Main(m, testenv.Drain(hostmem.Drain))
}
