//go:build linux

package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// JacobiPTX is jacobi.ll compiled with llc: the kernel jacobi_f64.
//
//go:embed jacobi.ptx
var JacobiPTX []byte

// The Jacobi rows solve the system of NVIDIA's jacobiCudaGraphs sample
// (n = 512: A is all ones with n+1 on the diagonal, b is 2n, x starts at
// 0) to a sum of |dx| below JacobiTol: 2,954 sweeps, one captured graph
// each (reset the sum, the sweep, the sum copied to host), the executable
// graph updated in place from the second on.
const (
	JacobiN    = 512
	JacobiTol  = 1e-2
	jacobiMax  = 100000
	jacobiWarp = 32
)

// Jacobi is a linear system on the device, for the Jacobi rows; it
// belongs to the context that was current when NewJacobi made it.
type Jacobi struct {
	N                  int
	mod                libcuda.Module
	fn                 libcuda.Func
	a, b, x, xnew, sum libcuda.Deviceptr
}

// NewJacobi loads the kernel and makes the system of size n in the
// current context. Close frees it.
func NewJacobi(n int) (j *Jacobi, err error) {
	j = &Jacobi{N: n}
	defer func() {
		if err != nil {
			err = errors.Join(err, j.Close())
		}
	}()
	if j.mod, err = libcuda.LoadModule(JacobiPTX); err != nil {
		return nil, err
	}
	if j.fn, err = j.mod.Function("jacobi_f64"); err != nil {
		return nil, err
	}
	a := make([]float32, n*n)
	bv := make([]float64, n)
	for i := range n {
		for k := range n {
			a[i*n+k] = 1
		}
		a[i*n+i] = float32(n + 1)
		bv[i] = 2 * float64(n)
	}
	for _, m := range []struct {
		d    *libcuda.Deviceptr
		size int
		host unsafe.Pointer
	}{{&j.a, 4 * n * n, unsafe.Pointer(&a[0])}, {&j.b, 8 * n, unsafe.Pointer(&bv[0])}, {&j.x, 8 * n, nil}, {&j.xnew, 8 * n, nil}, {&j.sum, 8, nil}} {
		if err := libcuda.MemAlloc(m.d, uint64(m.size)); err != nil {
			return nil, err
		}
		if m.host != nil {
			if err := libcuda.MemcpyHtoD(*m.d, m.host, uint64(m.size)); err != nil {
				return nil, err
			}
		}
	}
	return j, j.Reset()
}

// Reset sets x (and x_new) back to 0.
func (j *Jacobi) Reset() error {
	return errors.Join(libcuda.MemsetD8(j.x, 0, uint64(8*j.N)), libcuda.MemsetD8(j.xnew, 0, uint64(8*j.N)))
}

// X copies the solution of the last solve (which of x and x_new has it
// depends on the sweeps made) to the host.
func (j *Jacobi) X(iters int) ([]float64, error) {
	x := make([]float64, j.N)
	src := j.x
	if iters%2 == 1 {
		src = j.xnew
	}
	return x, libcuda.MemcpyDtoH(unsafe.Pointer(&x[0]), src, uint64(8*j.N))
}

// Close frees the system.
func (j *Jacobi) Close() error {
	var err error
	for _, d := range []libcuda.Deviceptr{j.a, j.b, j.x, j.xnew, j.sum} {
		if d != 0 {
			err = errors.Join(err, libcuda.MemFree(d))
		}
	}
	if j.mod != 0 {
		err = errors.Join(err, libcuda.ModuleUnload(j.mod))
	}
	return err
}

// SolveGo solves the system from x = 0 with graph.Cached on stream s and
// returns the sweeps made. The residual goes to host: to residual[0], a
// Go slice that is wrapped (hostmem.Wrap) for the solve and Use()d in each
// capture when pinned is nil, else to *pinned, pinned memory. The calling
// goroutine is locked to its thread with s's context cu current, as C's
// loop has it: each sweep runs through Cached.RunCurrent, which then asks
// the driver for neither context.
func (j *Jacobi) SolveGo(cu libcuda.Context, s libcuda.Stream, residual []float64, pinned *float64) (iters int, err error) {
	return j.solveGo(cu, s, residual, pinned, true)
}

// SolveGoRun is SolveGo through Cached.Run, which asks the driver for
// s's context and the thread's each sweep (two calls more than C's).
func (j *Jacobi) SolveGoRun(cu libcuda.Context, s libcuda.Stream, residual []float64, pinned *float64) (iters int, err error) {
	return j.solveGo(cu, s, residual, pinned, false)
}

func (j *Jacobi) solveGo(cu libcuda.Context, s libcuda.Stream, residual []float64, pinned *float64, current bool) (iters int, err error) {
	host := unsafe.Pointer(pinned)
	var buf *hostmem.Buffer
	if pinned == nil {
		if buf, err = hostmem.Wrap(cu, residual[:1]); err != nil {
			return 0, err
		}
		defer func() { err = errors.Join(err, buf.Free()) }()
		host = buf.Pointer()
	}
	cached := graph.NewCached(graph.DefaultMode)
	defer func() { err = errors.Join(err, cached.Close()) }()
	ctx := context.Background()
	grid, block := libcuda.Dim3{X: uint32(j.N)}, libcuda.Dim3{X: jacobiWarp}
	for k := range jacobiMax {
		in, out := j.x, j.xnew
		if k%2 == 1 {
			in, out = out, in
		}
		sweep := func(s libcuda.Stream) error {
			if err := libcuda.MemsetD8Async(j.sum, 0, 8, s); err != nil {
				return err
			}
			if err := j.fn.Launch(grid, block, 0, s, j.a, j.b, in, out, j.sum, uint64(j.N)); err != nil {
				return err
			}
			if err := libcuda.MemcpyDtoHAsync(host, j.sum, 8, s); err != nil {
				return err
			}
			if buf != nil {
				return buf.Use(s)
			}
			return nil
		}
		if current {
			err = cached.RunCurrent(cu, s, sweep)
		} else {
			err = cached.Run(s, sweep)
		}
		if err != nil {
			return k, err
		}
		if err := sync.Stream(ctx, 0, s); err != nil {
			return k, err
		}
		if *(*float64)(host) < JacobiTol {
			return k + 1, nil
		}
	}
	return jacobiMax, fmt.Errorf("jacobi: no convergence in %d sweeps", jacobiMax)
}

// SolveC is SolveGo in C (paired.c's pc_jacobi) with the residual in
// pinned memory.
func (j *Jacobi) SolveC(c *C, s libcuda.Stream, pinned *float64) (int, error) {
	var iters int32
	err := cErr(c.jacobi(j.fn.Handle(), s, j.a, j.b, j.x, j.xnew, j.sum, uint64(j.N), unsafe.Pointer(pinned), JacobiTol, jacobiMax, &iters))
	return int(iters), err
}

// jacobiPairs: the solver in Go, with the residual wrapped and Use()d in
// each capture and with it in pinned memory, each against the solver in C;
// both run on the fixture's thread with its context current, as C's does,
// through Cached.RunCurrent, and the pinned one also through Cached.Run.
// A round is one solve; each side's sweeps are checked to be the same.
func (f *Fixture) jacobiPairs(c *C) []pair {
	mk := func(way string, wrapped, run bool) pair {
		var report func()
		return pair{report: func() { report() }, op: fmt.Sprintf("jacobi, n=%d, graph.Cached, solve", JacobiN), a: way, bName: "C, pinned residual", perRound: 1, pairs: 5,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				j, err := NewJacobi(JacobiN)
				must(b, err)
				b.Cleanup(func() { must(b, libcuda.WithContext(f.Ctx, j.Close)) })
				var p unsafe.Pointer
				must(b, libcuda.MemHostAlloc(&p, 64, 0))
				b.Cleanup(func() { must(b, libcuda.WithContext(f.Ctx, func() error { return libcuda.MemFreeHost(p) })) })
				pinned := (*float64)(p)
				residual := make([]float64, 1)
				goIters, cIters := 0, 0
				report = func() { b.ReportMetric(float64(goIters), "sweeps") }
				check := func(got int, want *int) error {
					if *want == 0 {
						*want = got
					}
					if got != *want || (goIters != 0 && cIters != 0 && goIters != cIters) {
						return fmt.Errorf("jacobi: %d sweeps, then %d; Go %d, C %d", *want, got, goIters, cIters)
					}
					return nil
				}
				return func(int) error {
						if err := j.Reset(); err != nil {
							return err
						}
						var n int
						var err error
						switch {
						case run:
							n, err = j.SolveGoRun(f.Ctx, f.Stream, nil, pinned)
						case wrapped:
							n, err = j.SolveGo(f.Ctx, f.Stream, residual, nil)
						default:
							n, err = j.SolveGo(f.Ctx, f.Stream, nil, pinned)
						}
						if err != nil {
							return err
						}
						return check(n, &goIters)
					}, func(int) error {
						if err := j.Reset(); err != nil {
							return err
						}
						n, err := j.SolveC(c, f.Stream, pinned)
						if err != nil {
							return err
						}
						return check(n, &cIters)
					}
			}}
	}
	return []pair{
		mk("Go, wrapped residual Use()d in each capture", true, false),
		mk("Go, pinned residual", false, false),
		mk("Go, pinned residual, Cached.Run (asks for the contexts)", false, true),
	}
}
