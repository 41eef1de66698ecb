//go:build linux && (amd64 || arm64)

package cuda_test

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// The driver's callback threads keep the M they entered Go on, and give it
// back when they exit: many of them (the simulator's stream threads, one a
// stream, ended by Close) run host functions on the driver's thread and
// exit while the CPU profiler interrupts the process a thousand times a
// second, in a child process, which must end its test passing; the Ms
// the runtime made meanwhile stay a handful (given back and reused, not
// one per thread), and the key that binds them was made (the runtime
// recorded a bound M's g0 under it: with a wrong value the thread's exit
// crashed in runtime.dropm, every time).
func TestHostFuncDriverThreadsExitUnderTheProfiler(t *testing.T) {
	const rounds, streams, perStream = 150, 8, 4
	child, out, err := testenv.RunChild(t)
	if child {
		f := newFixture(t)
		runtime.SetCPUProfileRate(1000) // StartCPUProfile's 100 Hz would stand: it says so on stderr
		testenv.Must(t, pprof.StartCPUProfile(io.Discard))
		defer pprof.StopCPUProfile()
		stop, spun := make(chan struct{}), make(chan struct{})
		go func() { // a CPU-bound goroutine, so that SIGPROF keeps coming
			defer close(spun)
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		defer func() { close(stop); <-spun }()
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
		fmt.Printf("bound=%v ran=%d ms=%d\n", cuda.DriverThreadsBound(), ran.Load(), ms.Count()-ms0)
		return
	}
	if err != nil {
		t.Errorf("the child process failed: %v\n%s", err, out)
		return
	}
	m := regexp.MustCompile(`bound=(\w+) ran=(\d+) ms=(-?\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the child did not report:\n%s", out)
	}
	if m[1] != "true" && os.Getenv("PURECUDA_BIND_DRIVER_THREADS") != "0" {
		t.Errorf("the driver's threads were not bound to Ms")
	}
	if ran, _ := strconv.Atoi(m[2]); ran != rounds*streams*perStream {
		t.Errorf("%d of %d host functions ran", ran, rounds*streams*perStream)
	}
	// At most streams threads are in Go at once, and a thread that is
	// exiting may still hold its M while the next round starts: a few
	// rounds' worth, against the rounds*streams threads that exited.
	if ms, _ := strconv.Atoi(m[3]); ms > 8*streams {
		t.Errorf("the runtime made %d Ms while %d driver threads exited: they are not given back", ms, rounds*streams)
	}
	t.Logf("child: %s", m[0])
}
