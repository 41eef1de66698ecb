package graph_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/kernels"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The examples run in `go test` on the simulator, and under -tags gpu on
// the GPU, with the same output.

// setup is what every example needs: device 0's primary context current
// on the calling thread (inside libcuda.WithContext), a stream of the
// program's own, the test kernels and n int32 of device memory.
type setup struct {
	cu        libcuda.Context
	s         libcuda.Stream
	fill, add libcuda.Func // fill_i32(int *data, unsigned long long n, int value); add_one_i32(int *data, unsigned long long n)
	buf       libcuda.Deviceptr
	n         uint64
}

// run calls f with a setup inside WithContext and frees it after.
func run(f func(x *setup) error) {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	x := &setup{n: 1024}
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&x.cu, dev)); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}()
	err := libcuda.WithContext(x.cu, func() error {
		m, err := libcuda.LoadModule(kernels.PTX)
		if err != nil {
			return err
		}
		defer func() {
			if err := libcuda.ModuleUnload(m); err != nil {
				log.Print(err)
			}
		}()
		if x.fill, err = m.Function("fill_i32"); err != nil {
			return err
		}
		if x.add, err = m.Function("add_one_i32"); err != nil {
			return err
		}
		if err := libcuda.StreamCreate(&x.s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		defer func() {
			if err := libcuda.StreamDestroy(x.s); err != nil {
				log.Print(err)
			}
		}()
		if err := libcuda.MemAlloc(&x.buf, x.n*4); err != nil {
			return err
		}
		defer func() {
			if err := libcuda.MemFree(x.buf); err != nil {
				log.Print(err)
			}
		}()
		return f(x)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// first waits for the stream and returns the first and last int32 of buf.
func (x *setup) first() (int32, int32) {
	out := make([]int32, x.n)
	if err := libcuda.MemcpyDtoHAsync(unsafe.Pointer(&out[0]), x.buf, x.n*4, x.s); err != nil {
		log.Fatal(err)
	}
	if err := sync.Stream(context.Background(), x.cu, x.s); err != nil {
		log.Fatal(err)
	}
	return out[0], out[x.n-1]
}

var (
	grid  = libcuda.Dim3{X: 4}
	block = libcuda.Dim3{X: 256}
)

// Capture kernel launches into a graph, then launch the graph many times.
func ExampleCapture() {
	run(func(x *setup) error {
		if err := x.fill.Launch(grid, block, 0, x.s, x.buf, x.n, int32(0)); err != nil {
			return err
		}
		g, err := graph.Capture(x.s, graph.DefaultMode, func(s libcuda.Stream) error {
			return x.add.Launch(grid, block, 0, s, x.buf, x.n)
		})
		if errors.Is(err, graph.ErrInvalidated) {
			return err // the message says, where known, which call broke it
		} else if err != nil {
			return err
		}
		exec, err := g.Instantiate()
		if err != nil {
			return errors.Join(err, g.Destroy())
		}
		for range 100 {
			if err := exec.Launch(x.s); err != nil {
				return err
			}
		}
		fmt.Println(x.first())
		// Destroy returns at once, even while launches run.
		return errors.Join(exec.Destroy(), g.Destroy())
	})
	// Output: 100 100
}

// Update an executable graph from a new capture of the same work with
// other parameters, or instantiate the new graph when that cannot be done.
func ExampleExec_Update() {
	run(func(x *setup) error {
		capture := func(v int32) (*graph.Graph, error) {
			return graph.Capture(x.s, graph.DefaultMode, func(s libcuda.Stream) error {
				return x.fill.Launch(grid, block, 0, s, x.buf, x.n, v)
			})
		}
		g1, err := capture(1)
		if err != nil {
			return err
		}
		exec, err := g1.Instantiate()
		if err != nil {
			return errors.Join(err, g1.Destroy())
		}
		g2, err := capture(2)
		if err != nil {
			return errors.Join(err, g1.Destroy(), exec.Destroy())
		}
		inPlace, err := exec.Update(g2)
		if err != nil {
			return errors.Join(err, g1.Destroy(), g2.Destroy(), exec.Destroy())
		}
		if !inPlace {
			if err := exec.Destroy(); err != nil {
				return err
			}
			if exec, err = g2.Instantiate(); err != nil {
				return err
			}
		}
		fmt.Println("updated in place:", inPlace)
		if err := exec.Launch(x.s); err != nil {
			return err
		}
		fmt.Println(x.first())
		return errors.Join(exec.Destroy(), g1.Destroy(), g2.Destroy())
	})
	// Output:
	// updated in place: true
	// 2 2
}

// A Cached captures on every run and launches an executable graph kept up
// to date in place.
func ExampleCached() {
	run(func(x *setup) error {
		c := graph.NewCached(graph.DefaultMode)
		for step := range 10 {
			err := c.Run(x.s, func(s libcuda.Stream) error {
				return x.fill.Launch(grid, block, 0, s, x.buf, x.n, int32(step))
			})
			if err != nil {
				return errors.Join(err, c.Close())
			}
		}
		fmt.Println(x.first())
		fmt.Printf("%+v\n", c.Stats())
		return c.Close()
	})
	// Output:
	// 9 9
	// {Runs:10 Updates:9 Instantiations:1}
}

// Keep a resource that captured work uses until no graph can run it.
func ExampleLease() {
	run(func(x *setup) error {
		released := make(chan struct{})
		g, err := graph.Capture(x.s, graph.DefaultMode, func(s libcuda.Stream) error {
			if err := libcuda.MemsetD32Async(x.buf, 7, x.n, s); err != nil {
				return err
			}
			// Called once the graph and every executable graph made
			// from it are gone, and their last launch has ended: the
			// place to free what the graph uses.
			graph.Lease(s, func() { close(released) })
			return nil
		})
		if err != nil {
			return err
		}
		exec, err := g.Instantiate()
		if err != nil {
			return errors.Join(err, g.Destroy())
		}
		if err := exec.Launch(x.s); err != nil {
			return err
		}
		if err := g.Destroy(); err != nil {
			return err
		}
		select {
		case <-released:
			fmt.Println("released while an executable graph exists")
		default:
			fmt.Println("kept while an executable graph exists")
		}
		if err := exec.Destroy(); err != nil {
			return err
		}
		// Wait for the release, e.g. before the program exits.
		if err := graph.Drain(context.Background()); err != nil {
			return err
		}
		<-released
		fmt.Println("released after the last launch")
		return nil
	})
	// Output:
	// kept while an executable graph exists
	// released after the last launch
}

// Work that no capture allows (here a wait for a whole context) is
// postponed (sync.Postpone) until the captures made through this package
// have ended; graph.Drain waits for it.
func Example_postpone() {
	run(func(x *setup) error {
		waited := make(chan error, 1)
		_, err := graph.Capture(x.s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			sync.Postpone(func() { waited <- sync.Context(context.Background(), x.cu) })
			fmt.Println("captures in progress:", sync.CapturesInProgress())
			return errors.New("nothing to keep")
		})
		fmt.Println(err != nil)
		if err := graph.Drain(context.Background()); err != nil {
			return err
		}
		fmt.Println("the postponed wait:", <-waited)
		return nil
	})
	// Output:
	// captures in progress: 1
	// true
	// the postponed wait: <nil>
}

// Query an event (sync.Relaxed) from a goroutine that is not capturing,
// without breaking another goroutine's capture in global mode.
func Example_relaxed() {
	run(func(x *setup) error {
		var e libcuda.Event
		if err := libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			return err
		}
		if err := libcuda.EventRecord(e, x.s); err != nil {
			return errors.Join(err, libcuda.EventDestroy(e))
		}
		queried := make(chan error, 1)
		g, err := graph.Capture(x.s, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			// Another goroutine, during this global-mode capture.
			go func() {
				queried <- sync.Relaxed(func() error { return sync.Event(context.Background(), e) })
			}()
			if err := <-queried; err != nil {
				return err
			}
			return x.add.Launch(grid, block, 0, s, x.buf, x.n)
		})
		fmt.Println("capture:", err)
		if err == nil {
			err = g.Destroy()
		}
		return errors.Join(err, libcuda.EventDestroy(e))
	})
	// Output: capture: <nil>
}
