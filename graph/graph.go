package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	gosync "sync"

	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// ErrDestroyed is matched (errors.Is) by the error of a method called on
// a Graph or Exec that was destroyed, or a Cached that was closed.
var ErrDestroyed = errors.New("graph: already destroyed")

// Graph is a graph made by a capture. Instantiate it to launch it;
// Destroy it when it is no longer needed.
type Graph struct {
	mu      gosync.Mutex
	raw     libcuda.Graph   // 0 once destroyed
	ctx     libcuda.Context // the captured stream's context
	leases  *leases         // attached during the capture; the graph holds a reference
	cleanup runtime.Cleanup
}

// graphRemains is what the GC backstop of a Graph needs.
type graphRemains struct {
	raw    libcuda.Graph
	leases *leases
}

// newGraph makes a Graph of raw, which takes over the reference on l (nil
// when the capture leased nothing).
func newGraph(raw libcuda.Graph, cu libcuda.Context, l *leases) *Graph {
	g := &Graph{raw: raw, ctx: cu, leases: l}
	g.cleanup = runtime.AddCleanup(g, func(r graphRemains) {
		sync.Postpone(func() {
			slog.Debug("graph: a Graph was not destroyed; destroying it after the GC found it unreachable")
			if err := sync.Relaxed(func() error { return libcuda.GraphDestroy(r.raw) }); err != nil {
				err = dl.Failed("", "cuGraphDestroy", err)
				slog.Error("graph: destroying an unreachable Graph", "err", err)
				return // what its leases hold is kept
			}
			r.leases.unref()
		})
	}, graphRemains{raw, l})
	return g
}

// Raw returns the driver's handle, valid until Destroy. Do not destroy it,
// and keep g reachable while using it (runtime.KeepAlive).
func (g *Graph) Raw() libcuda.Graph {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.raw
}

// Nodes returns the number of nodes in g.
func (g *Graph) Nodes() (int, error) {
	if err := g.lock("Nodes"); err != nil {
		return 0, err
	}
	defer g.mu.Unlock()
	var n uint64
	if err := libcuda.GraphGetNodes(g.raw, nil, &n); err != nil {
		return 0, fmt.Errorf("graph: Nodes: %w", dl.Failed("", "cuGraphGetNodes", err))
	}
	return int(n), nil
}

// Instantiate makes an executable graph of g. The executable graph keeps
// g's leases until it is destroyed and its last launch has finished.
func (g *Graph) Instantiate() (*Exec, error) { return g.instantiate("Instantiate", 0) }

// InstantiateAutoFree is Instantiate for a graph that allocates memory it
// does not free (a mem-alloc node with no mem-free node): each launch of
// the executable graph frees what the previous launch left allocated
// before it allocates it again, at the same address
// (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH). Without it, the
// driver refuses a launch while a previous launch's allocation is not
// freed.
func (g *Graph) InstantiateAutoFree() (*Exec, error) {
	return g.instantiate("InstantiateAutoFree", libcuda.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
}

func (g *Graph) instantiate(op string, flags libcuda.GraphInstantiate_flags) (*Exec, error) {
	if err := g.lock(op); err != nil {
		return nil, err
	}
	defer g.mu.Unlock()
	held := g.leases.held()
	var x libcuda.GraphExec
	var ev libcuda.Event
	made := false
	err := sync.RelaxedIn(g.ctx, func() error {
		if err := libcuda.GraphInstantiateWithFlags(&x, g.raw, uint64(flags)); err != nil {
			return dl.Failed("", "cuGraphInstantiateWithFlags", err)
		}
		if held {
			if err := newEvent(&ev); err != nil {
				return errors.Join(err, execDestroy(x))
			}
		}
		made = true
		return nil
	})
	if err != nil {
		if made { // restoring the thread's mode or context failed after
			err = errors.Join(err, sync.RelaxedIn(g.ctx, func() error {
				derr := execDestroy(x)
				if ev != 0 {
					if eerr := libcuda.EventDestroy(ev); eerr != nil {
						derr = errors.Join(derr, dl.Failed("", "cuEventDestroy", eerr))
					}
				}
				return derr
			}))
		}
		return nil, fmt.Errorf("graph: %s: %w", op, err)
	}
	return newExec(x, g.ctx, ev, g.hold(held)), nil
}

// lock locks g for operation op, or returns ErrDestroyed unlocked.
func (g *Graph) lock(op string) error {
	g.mu.Lock()
	if g.raw == 0 {
		g.mu.Unlock()
		return fmt.Errorf("graph: %s: %w", op, ErrDestroyed)
	}
	return nil
}

// hold returns a reference to g's leases for an executable graph, or nil
// when held is false (g leases nothing); g.mu is held.
func (g *Graph) hold(held bool) *leases {
	if !held {
		return nil
	}
	g.leases.ref()
	return g.leases
}

// newEvent creates the event that tracks an executable graph's launches,
// in the current context.
func newEvent(ev *libcuda.Event) error {
	if err := libcuda.EventCreate(ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING|libcuda.CU_EVENT_BLOCKING_SYNC)); err != nil {
		return dl.Failed("", "cuEventCreate", err)
	}
	return nil
}

// execDestroy destroys the executable graph x.
func execDestroy(x libcuda.GraphExec) error {
	if err := libcuda.GraphExecDestroy(x); err != nil {
		return dl.Failed("", "cuGraphExecDestroy", err)
	}
	return nil
}

// Destroy destroys g. Its leases are released once every executable graph
// made from it is destroyed and has finished its last launch; Destroy
// itself does not wait.
func (g *Graph) Destroy() error {
	if err := g.lock("Destroy"); err != nil {
		return err
	}
	defer g.mu.Unlock()
	g.cleanup.Stop()
	raw := g.raw
	g.raw = 0
	if err := destroyGraph(raw); err != nil {
		// What the leases hold is kept: the graph may still exist.
		return fmt.Errorf("graph: Destroy: %w", err)
	}
	g.leases.unref()
	return nil
}
