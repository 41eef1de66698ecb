package graph

import (
	"log/slog"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// destroyGraph destroys the driver's graph raw as sync.CaptureSafe runs a
// call, without a context (cuGraphDestroy needs none).
//
// A destroy that the driver made counts as done even when putting the
// thread's capture mode back failed after it (logged): the graph is gone,
// and its callers would otherwise keep what it held for good.
func destroyGraph(raw libcuda.Graph) error {
	destroyed := false
	err := sync.CaptureSafe(func() error {
		if err := libcuda.GraphDestroy(raw); err != nil {
			return dl.Failed("", "cuGraphDestroy", err)
		}
		destroyed = true
		return nil
	})
	if destroyed && err != nil {
		slog.Error("graph: graph destroyed, but restoring the thread's capture mode after failed", "err", err)
		return nil
	}
	return err
}
