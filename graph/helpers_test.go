package graph_test

import (
	"strings"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// The tests run against the simulator (default) or the real driver (-tags
// gpu), set up by internal/testenv, whose helpers they call.

func TestMain(m *testing.M) {
	// No background unregister in flight when a test holds a stream.
	testenv.BeforeHold = func() { hostmem.Trim() }
	testenv.Main(m, testenv.Drain(hostmem.Drain))
}

// captureModes are the driver's three capture modes.
var captureModes = []libcuda.StreamCaptureMode{
	libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL,
	libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
	libcuda.CU_STREAM_CAPTURE_MODE_RELAXED,
}

// modeName is a capture mode's name in lower case.
func modeName(m libcuda.StreamCaptureMode) string {
	return strings.ToLower(strings.TrimPrefix(m.String(), "CU_STREAM_CAPTURE_MODE_"))
}
