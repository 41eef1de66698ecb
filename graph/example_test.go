package graph_test

import (
	"context"
	"errors"
	"log"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Capture a kernel launch into a graph, then launch the graph many times.
func ExampleCapture() {
	var (
		s   libcuda.Stream // a stream of the program's own
		fn  libcuda.Func   // a kernel: add_one_i32(int *data, unsigned long long n)
		buf libcuda.Deviceptr
		n   uint64
	)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		return fn.Launch(libcuda.Dim3{X: 16}, libcuda.Dim3{X: 256}, 0, s, buf, n)
	})
	if errors.Is(err, graph.ErrInvalidated) {
		log.Fatal(err) // the message says, where known, which call broke it
	} else if err != nil {
		log.Fatal(err)
	}
	defer g.Destroy()
	exec, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Destroy() // returns at once, even while launches run
	for range 100 {
		if err := exec.Launch(s); err != nil {
			log.Fatal(err)
		}
	}
	if err := sync.Stream(context.Background(), 0, s); err != nil {
		log.Fatal(err)
	}
}

// Update an executable graph from a new capture of the same work with
// other parameters, or instantiate the new graph when that cannot be done.
func ExampleExec_Update() {
	var (
		s    libcuda.Stream
		exec *graph.Exec // instantiated from an earlier capture
		next *graph.Graph
	)
	inPlace, err := exec.Update(next)
	if err != nil {
		log.Fatal(err)
	}
	if !inPlace {
		if err := exec.Destroy(); err != nil {
			log.Fatal(err)
		}
		if exec, err = next.Instantiate(); err != nil {
			log.Fatal(err)
		}
	}
	if err := exec.Launch(s); err != nil {
		log.Fatal(err)
	}
}

// A Cached captures on every run and launches an executable graph kept up
// to date in place.
func ExampleCached() {
	var (
		s    libcuda.Stream
		fill libcuda.Func // fill_i32(int *data, unsigned long long n, int value)
		buf  libcuda.Deviceptr
	)
	c := graph.NewCached(graph.DefaultMode)
	defer c.Close()
	for step := range 10 {
		err := c.Run(s, func(s libcuda.Stream) error {
			return fill.Launch(libcuda.Dim3{X: 4}, libcuda.Dim3{X: 256}, 0, s, buf, uint64(1024), int32(step))
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("%+v", c.Stats()) // {Runs:10 Updates:9 Instantiations:1}
}

// Keep a resource that captured work uses until no graph can run it.
func ExampleLease() {
	var (
		s   libcuda.Stream
		buf libcuda.Deviceptr // allocated before the capture
	)
	g, err := graph.Capture(s, graph.DefaultMode, func(s libcuda.Stream) error {
		if err := libcuda.MemsetD32Async(buf, 7, 1024, s); err != nil {
			return err
		}
		graph.Lease(s, func() {
			// The graph and every executable graph made from it are gone:
			// free buf once no capture is in progress.
			graph.Postpone(func() {
				if err := libcuda.MemFree(buf); err != nil {
					log.Print(err)
				}
			})
		})
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	exec, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	if err := exec.Launch(s); err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(g.Destroy(), exec.Destroy()); err != nil {
		log.Fatal(err)
	}
	// Wait for the release, e.g. before the program exits.
	if err := graph.Drain(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// Work that no capture allows (here a wait for a whole context) is
// postponed until the captures made through this package have ended.
func ExamplePostpone() {
	var cu libcuda.Context
	graph.Postpone(func() {
		if err := sync.Context(context.Background(), cu); err != nil {
			log.Print(err)
		}
	})
}

// Query an event from a goroutine that is not capturing, without breaking
// another goroutine's capture in global mode.
func ExampleRelaxed() {
	var e libcuda.Event // recorded outside any capture
	err := graph.Relaxed(func() error { return libcuda.EventQuery(e) })
	if err != nil && !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
		log.Fatal(err)
	}
}
