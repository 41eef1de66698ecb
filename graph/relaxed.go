package graph

import "github.com/purecuda/purecuda/sync"

// Relaxed runs f on a locked OS thread in relaxed capture mode, as
// sync.Relaxed does. cuCtxSynchronize is refused during a capture in every
// mode: use sync.Postpone for it.
//
// Deprecated: use sync.Relaxed (or sync.CaptureSafe, which switches the
// mode only while a capture is in progress).
func Relaxed(f func() error) error { return sync.Relaxed(f) }
