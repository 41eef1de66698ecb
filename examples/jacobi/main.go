// Command jacobi solves a linear system by Jacobi iteration with a CUDA
// graph captured again for every sweep and updated in place, after NVIDIA's
// classic jacobiCudaGraphs sample, written with package cuda and
// graph.Cached. The system is 512×512: random off-diagonal entries in
// [0, 1), each diagonal entry 1 more than the rest of its row (so the
// iteration converges, slowly), b = 1024 everywhere, x starting at 0. Each
// sweep is one graph: zero the difference, the sweep kernel (one warp a
// row) from one x buffer into the other, which also adds up |x_new - x|,
// and a copy of that sum into pinned host memory. The buffers swap every
// sweep, so every capture differs from the last in its pointers only and
// graph.Cached updates the executable graph in place instead of
// instantiating it again. The loop stops when the sum falls below 1e-2
// (3,129 sweeps) or after 10,000.
//
// The timed part is the loop (capture, update, launch, wait, read the sum,
// every sweep); baseline.c does the same in C. The check runs the same
// iteration on the CPU: the sweep counts must agree within one and the
// solutions within 1e-3. It prints "check: PASSED" or exits with status 1.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
	"github.com/purecuda/purecuda/graph"
)

//go:embed kernels.ptx
var ptx []byte

const (
	n         = 512
	maxSweeps = 10000
	tol       = 1e-2
	threads   = 256
)

func main() { sample.Main("jacobi", run) }

func run() (err error) {
	env, err := sample.Open(ptx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	ctx, mod := env.Ctx, env.Mod
	sweep, err := mod.Func("jacobi_step")
	if err != nil {
		return err
	}
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	bg := context.Background()

	a, b := makeSystem()
	diff := make([]float64, 1)
	diffBuf, err := cuda.Pin(ctx, diff)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, diffBuf.Free()) }()
	da, err := cuda.Alloc[float32](s, n*n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, da.Free()) }()
	db, err := cuda.Alloc[float64](s, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Free()) }()
	var dx [2]cuda.Slice[float64]
	for i := range dx {
		if dx[i], err = cuda.Alloc[float64](s, n); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, dx[i].Free()) }()
	}
	ddiff, err := cuda.Alloc[float64](s, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ddiff.Free()) }()
	if err := cuda.CopyToDevice(s, da, a); err != nil {
		return err
	}
	if err := cuda.CopyToDevice(s, db, b); err != nil {
		return err
	}
	if err := cuda.Zero(s, dx[0]); err != nil {
		return err
	}
	if err := s.Sync(bg); err != nil {
		return err
	}

	c := graph.NewCached(graph.DefaultMode)
	defer func() { err = errors.Join(err, c.Close()) }()
	sweeps := 0
	var submit time.Duration // in RunCached: capture, update, launch
	t0 := time.Now()
	for k := range maxSweeps {
		in, out := dx[k%2], dx[(k+1)%2]
		t1 := time.Now()
		err := s.RunCached(c, func(s *cuda.Stream) error {
			if err := cuda.Zero(s, ddiff); err != nil {
				return err
			}
			if err := s.Launch(sweep, cuda.Grid(n*32/threads, 1, 1), cuda.Block(threads, 1, 1), da.Arg(), db.Arg(), in.Arg(), out.Arg(), ddiff.Arg(), cuda.Int32(n)); err != nil {
				return err
			}
			return cuda.CopyToHost(s, diffBuf, ddiff)
		})
		submit += time.Since(t1)
		if err != nil {
			return err
		}
		if err := s.Sync(bg); err != nil {
			return err
		}
		sweeps = k + 1
		if diff[0] < tol {
			break
		}
	}
	elapsed := time.Since(t0)
	x := make([]float64, n)
	if err := cuda.CopyToHost(s, x, dx[sweeps%2]); err != nil {
		return err
	}
	if err := s.Sync(bg); err != nil {
		return err
	}

	ref, cpu := cpuJacobi(a, b)
	worst := 0.0
	for i := range x {
		worst = max(worst, math.Abs(x[i]-ref[i]))
	}
	st := c.Stats()
	fmt.Printf("jacobi: %dx%d, %d sweeps on the GPU (%d graph updates in place), %d on the CPU, largest difference %.3g\n",
		n, n, sweeps, st.Updates, cpu, worst)
	msec := float64(elapsed) / float64(time.Millisecond)
	fmt.Printf("a sweep: %.2f us to capture, update and launch, %.2f us the rest (wait, read)\n",
		float64(submit.Nanoseconds())/1e3/float64(sweeps), (msec*1e3-float64(submit.Nanoseconds())/1e3)/float64(sweeps))
	fmt.Printf("time: %.3f ms (%.2f us a sweep)\n", msec, msec*1e3/float64(sweeps))
	if sweeps >= maxSweeps || abs(sweeps-cpu) > 1 || !(worst < 1e-3) || st.Updates != sweeps-1 {
		fmt.Println("check: FAILED")
		return errors.New("check failed")
	}
	fmt.Println("check: PASSED")
	return nil
}

// makeSystem builds a (row-major, each diagonal entry 1 more than the sum of
// the rest of its row) and b, from the examples' generator, as baseline.c
// does.
func makeSystem() (a []float32, b []float64) {
	a, b = make([]float32, n*n), make([]float64, n)
	r := sample.NewRand()
	for i := range n {
		var sum float32
		for j := range n {
			if j != i {
				a[i*n+j] = r.Float()
				sum += a[i*n+j]
			}
		}
		a[i*n+i] = sum + 1
		b[i] = 2 * n
	}
	return a, b
}

// cpuJacobi runs the same iteration on the CPU; it returns the solution and
// the number of sweeps.
func cpuJacobi(a []float32, b []float64) ([]float64, int) {
	x, next := make([]float64, n), make([]float64, n)
	k := 1
	for ; k <= maxSweeps; k++ {
		d := 0.0
		for i := range n {
			acc := 0.0
			for j := range n {
				if j != i {
					acc += float64(a[i*n+j]) * x[j]
				}
			}
			next[i] = (b[i] - acc) / float64(a[i*n+i])
			d += math.Abs(next[i] - x[i])
		}
		x, next = next, x
		if d < tol {
			break
		}
	}
	return x, k
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
