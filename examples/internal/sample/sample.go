// Package sample holds what the example programs share, as the helper
// headers of C samples do: the exit on failure, device 0's context with
// the program's module loaded, the programs' pseudo-random numbers (the
// same as rnd in examples/baseline.h, so that Go and C work on the same
// data) and milliseconds for printing. It uses package cuda only.
package sample

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/purecuda/purecuda/cuda"
)

// Main runs run and, when it fails, prints the program's name and the
// error on standard error and exits with status 1.
//
// With PURECUDA_SAMPLE_CPUPROFILE set to a file name, the run is CPU
// profiled into that file (for comparing a sample with its C baseline),
// and the number of garbage collections during the run is printed on
// standard error.
func Main(name string, run func() error) {
	if err := profiled(run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// GPU is the first device's primary context with one module loaded.
type GPU struct {
	Ctx *cuda.Context
	Mod *cuda.Module
}

// Open retains the first device's primary context and loads image (PTX,
// cubin or fatbin) into it. Close releases both.
func Open(image []byte) (*GPU, error) {
	devs, err := cuda.Devices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, errors.New("no CUDA device")
	}
	ctx, err := devs[0].Context()
	if err != nil {
		return nil, err
	}
	mod, err := cuda.LoadModule(ctx, image)
	if err != nil {
		return nil, errors.Join(err, ctx.Close())
	}
	return &GPU{Ctx: ctx, Mod: mod}, nil
}

// Close unloads the module and releases the context.
func (g *GPU) Close() error { return errors.Join(g.Mod.Close(), g.Ctx.Close()) }

// Rand is the examples' pseudo-random generator: a 32-bit linear
// congruential one, seeded with 1.
type Rand struct{ seed uint32 }

// NewRand returns a generator at the start of its sequence.
func NewRand() *Rand { return &Rand{seed: 1} }

// Float returns the next value, in [0, 1).
func (r *Rand) Float() float32 {
	r.seed = r.seed*1664525 + 1013904223
	return float32(r.seed>>8) / (1 << 24)
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// profiled runs run, under a CPU profile when PURECUDA_SAMPLE_CPUPROFILE
// names a file.
func profiled(run func() error) error {
	path := os.Getenv("PURECUDA_SAMPLE_CPUPROFILE")
	if path == "" {
		return run()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(err, f.Close())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = run()
	runtime.ReadMemStats(&after)
	pprof.StopCPUProfile()
	fmt.Fprintf(os.Stderr, "garbage collections during the run: %d; allocations: %d (%d bytes)\n",
		after.NumGC-before.NumGC, after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc)
	return errors.Join(err, f.Close())
}
