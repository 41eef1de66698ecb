package graph

import (
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Relaxed runs f on a locked OS thread in relaxed capture mode, as
// sync.Relaxed does. cuCtxSynchronize is refused during a capture in every
// mode: use Postpone for it.
func Relaxed(f func() error) error { return sync.Relaxed(f) }

// inContext runs f in relaxed mode with cu current, on a locked thread.
func inContext(cu libcuda.Context, f func() error) error {
	return libcuda.WithContext(cu, func() error { return Relaxed(f) })
}
