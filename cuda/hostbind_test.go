//go:build linux && (amd64 || arm64)

package cuda_test

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The driver's callback threads keep the M they entered Go on, and give it
// back when they exit: many of them (the simulator's stream threads, one a
// stream, ended by Close) run host functions on the driver's thread and
// exit, and a few contexts are made and closed, while the CPU profiler
// interrupts the process a thousand times a second, in a child process,
// which must end its test passing; the Ms the runtime made meanwhile stay
// a handful (given back and reused, not one per thread), and the key that
// binds them was made (the runtime recorded a bound M's g0 under it: with
// a wrong value the thread's exit crashed in runtime.dropm, every time).
func TestHostFuncDriverThreadsExitUnderTheProfiler(t *testing.T) {
	const rounds, streams, perStream, contexts = 150, 8, 4, 3
	child, out, err := testenv.RunChild(t)
	if child {
		f := newFixture(t)
		runtime.SetCPUProfileRate(1000) // stands: StartCPUProfile's own 100 Hz is refused (a line on stderr)
		testenv.Must(t, pprof.StartCPUProfile(io.Discard))
		defer pprof.StopCPUProfile()
		var stop atomic.Bool
		spun := make(chan struct{})
		go func() { // a CPU-bound goroutine, so that SIGPROF keeps coming
			defer close(spun)
			for !stop.Load() {
			}
		}()
		defer func() { stop.Store(true); <-spun }()
		ms := pprof.Lookup("threadcreate")
		var ran atomic.Int64
		ms0 := ms.Count()
		for range rounds {
			ss := make([]*cuda.Stream, 0, streams)
			for range streams {
				s, err := f.ctx.NewStream()
				testenv.Must(t, err)
				ss = append(ss, s)
				for range perStream {
					testenv.Must(t, s.HostFuncOnDriverThread(func() { ran.Add(1) }))
				}
			}
			for _, s := range ss {
				sync(t, s)
				testenv.MustBounded(t, "s.Close", s.Close)
			}
		}
		// Contexts made and closed too, under the profiler: on the GPU
		// the driver's callback threads may live as long as a context.
		devs, err := cuda.Devices()
		testenv.Must(t, err)
		for range contexts {
			ctx, err := devs[0].Context()
			testenv.Must(t, err)
			s, err := ctx.NewStream()
			testenv.Must(t, err)
			for range perStream {
				testenv.Must(t, s.HostFuncOnDriverThread(func() { ran.Add(1) }))
			}
			sync(t, s)
			testenv.MustBounded(t, "s.Close", s.Close)
			testenv.MustBounded(t, "ctx.Close", ctx.Close)
		}
		bound, n, made := cuda.DriverThreadsBound(), ran.Load(), ms.Count()-ms0
		if !bound && os.Getenv("PURECUDA_BIND_DRIVER_THREADS") != "0" {
			t.Errorf("the driver's threads were not bound to Ms")
		}
		if want := (rounds*streams + contexts) * perStream; n != int64(want) {
			t.Errorf("%d of %d host functions ran", n, want)
		}
		// At most streams threads are in Go at once, and a thread that is
		// exiting may still hold its M while the next rounds start: a few
		// rounds' worth, against the rounds*streams threads that exited.
		if made > 8*streams {
			t.Errorf("the runtime made %d Ms while %d driver threads exited: they are not given back", made, rounds*streams)
		}
		fmt.Printf("the child ran: bound=%v ran=%d ms=%d\n", bound, n, made)
		return
	}
	i := strings.Index(out, "the child ran: ")
	if err != nil || i < 0 || !strings.Contains(out, "--- PASS") {
		t.Errorf("the child process failed (%v):\n%s", err, out)
		return
	}
	line, _, _ := strings.Cut(out[i:], "\n")
	t.Log(line)
}
