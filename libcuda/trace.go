package libcuda

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
)

// EnvTrace names the environment variable that turns tracing on at start:
// PURECUDA_TRACE=1.
const EnvTrace = "PURECUDA_TRACE"

// tracing is read only on the failure path of a call, so tracing costs
// nothing while calls succeed.
var tracing atomic.Bool

func init() {
	if on, err := strconv.ParseBool(os.Getenv(EnvTrace)); err == nil && on {
		tracing.Store(true)
	}
}

// SetTrace turns tracing of failed driver calls on or off and reports the
// previous setting. With tracing on, every driver call that returns an error
// is logged through log/slog's default logger at level Info, as in
//
//	cuStreamSynchronize returned 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
//
// with attributes func, code and name. CUDA_ERROR_NOT_READY is not logged:
// it is the normal answer of a query while work is still running, and
// polling loops would drown everything else.
func SetTrace(on bool) bool { return tracing.Swap(on) }

func trace(symbol string, r Result) {
	if r == CUDA_ERROR_NOT_READY {
		return
	}
	name := r.String()
	slog.Default().LogAttrs(context.Background(), slog.LevelInfo,
		symbol+" returned "+strconv.Itoa(int(r))+" ("+name+")",
		slog.String("func", symbol), slog.Int("code", int(r)), slog.String("name", name))
}
