//go:build linux

package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/purecuda/purecuda/cuda"
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

// CudaJacobi is a Jacobi system seen through package cuda: its kernel
// from a cuda.Module and its memory as Foreign Slices of the context.
type CudaJacobi struct {
	j      *Jacobi
	mod    *cuda.Module
	fn     *cuda.Func
	a      cuda.Slice[float32]
	b, sum cuda.Slice[float64]
	x      [2]cuda.Slice[float64]
}

// Cuda views j through package cuda in cuctx, the context j was made in.
// Close frees the views (not j's memory).
func (j *Jacobi) Cuda(cuctx *cuda.Context) (cj *CudaJacobi, err error) {
	cj = &CudaJacobi{j: j}
	defer func() {
		if err != nil {
			err = errors.Join(err, cj.Close())
		}
	}()
	if cj.mod, err = cuda.LoadModule(cuctx, JacobiPTX); err != nil {
		return nil, err
	}
	if cj.fn, err = cj.mod.Func("jacobi_f64"); err != nil {
		return nil, err
	}
	n := j.N
	if cj.a, err = cuda.Foreign[float32](cuctx, j.a, n*n, nil); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		s    *cuda.Slice[float64]
		p    libcuda.Deviceptr
		size int
	}{{&cj.b, j.b, n}, {&cj.x[0], j.x, n}, {&cj.x[1], j.xnew, n}, {&cj.sum, j.sum, 1}} {
		if *v.s, err = cuda.Foreign[float64](cuctx, v.p, v.size, nil); err != nil {
			return nil, err
		}
	}
	return cj, nil
}

// Close frees the views and unloads the module.
func (cj *CudaJacobi) Close() error {
	var err error
	for _, s := range []cuda.Slice[float64]{cj.b, cj.x[0], cj.x[1], cj.sum} {
		if s.Len() > 0 {
			err = errors.Join(err, s.Free())
		}
	}
	if cj.a.Len() > 0 {
		err = errors.Join(err, cj.a.Free())
	}
	if cj.mod != nil {
		err = errors.Join(err, cj.mod.Close())
	}
	return err
}

// Solve solves the system from x = 0 as examples/jacobi's loop does,
// through package cuda: each sweep is s.RunCached of cuda.Zero,
// Stream.Launch and cuda.CopyToHost into residual (Pin'ed memory), then
// s.Sync; with driverWait, libcuda.StreamSynchronize instead of s.Sync,
// so that a row of each splits the layers' cost from the wait's. It runs
// on a goroutine of its own that is not locked to its thread, as the
// sample's main goroutine is not. It returns the sweeps made.
func (cj *CudaJacobi) Solve(s *cuda.Stream, residual *cuda.Pinned[float64], driverWait bool) (int, error) {
	type result struct {
		iters int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		n, err := cj.solve(s, residual, driverWait)
		done <- result{n, err}
	}()
	r := <-done
	return r.iters, r.err
}

func (cj *CudaJacobi) solve(s *cuda.Stream, residual *cuda.Pinned[float64], driverWait bool) (iters int, err error) {
	c := cuda.NewCached(cuda.DefaultCaptureMode)
	defer func() { err = errors.Join(err, c.Close()) }()
	bg := context.Background()
	n := cj.j.N
	grid, block := cuda.Grid(n, 1, 1), cuda.Block(jacobiWarp, 1, 1)
	for k := range jacobiMax {
		in, out := cj.x[k%2], cj.x[(k+1)%2]
		err := s.RunCached(c, func(s *cuda.Stream) error {
			if err := cuda.Zero(s, cj.sum); err != nil {
				return err
			}
			if err := s.Launch(cj.fn, grid, block, cj.a.Arg(), cj.b.Arg(), in.Arg(), out.Arg(), cj.sum.Arg(), cuda.Uint64(uint64(n))); err != nil {
				return err
			}
			return cuda.CopyToHost(s, residual, cj.sum)
		})
		if err != nil {
			return k, err
		}
		if driverWait {
			err = libcuda.StreamSynchronize(s.Raw())
		} else {
			err = s.Sync(bg)
		}
		if err != nil {
			return k, err
		}
		if residual.Data()[0] < JacobiTol {
			return k + 1, nil
		}
	}
	return jacobiMax, fmt.Errorf("jacobi: no convergence in %d sweeps", jacobiMax)
}

// SolveDriver is SolveC written in Go: the same driver calls in the same
// order, each through its generated wrapper (libcuda), nothing else: the
// floor of a Go program's sweep, whose gap to C's is what the calls'
// crossings from Go into C cost. The calling goroutine is locked to its
// thread with s's context current, as SolveGo's.
func (j *Jacobi) SolveDriver(s libcuda.Stream, pinned *float64) (iters int, err error) {
	var exec libcuda.GraphExec
	defer func() {
		if exec != 0 {
			err = errors.Join(err, libcuda.GraphExecDestroy(exec))
		}
	}()
	n := uint64(j.N)
	for k := range jacobiMax {
		in, out := j.x, j.xnew
		if k%2 == 1 {
			in, out = out, in
		}
		params := [6]unsafe.Pointer{unsafe.Pointer(&j.a), unsafe.Pointer(&j.b), unsafe.Pointer(&in), unsafe.Pointer(&out), unsafe.Pointer(&j.sum), unsafe.Pointer(&n)}
		if err := libcuda.StreamBeginCapture(s, libcuda.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); err != nil {
			return k, err
		}
		err := libcuda.MemsetD8Async(j.sum, 0, 8, s)
		if err == nil {
			err = libcuda.LaunchKernel(j.fn.Handle(), uint32(j.N), 1, 1, jacobiWarp, 1, 1, 0, s, &params[0], nil)
		}
		if err == nil {
			err = libcuda.MemcpyDtoHAsync(unsafe.Pointer(pinned), j.sum, 8, s)
		}
		var g libcuda.Graph
		if eerr := libcuda.StreamEndCapture(s, &g); err == nil {
			err = eerr
		}
		if err == nil {
			if exec != 0 {
				var info libcuda.GraphExecUpdateResultInfo
				err = libcuda.GraphExecUpdate(exec, g, &info)
			} else {
				err = libcuda.GraphInstantiateWithFlags(&exec, g, 0)
			}
		}
		if g != 0 {
			err = errors.Join(err, libcuda.GraphDestroy(g))
		}
		if err == nil {
			err = libcuda.GraphLaunch(exec, s)
		}
		if err == nil {
			err = libcuda.StreamSynchronize(s)
		}
		if err != nil {
			return k, err
		}
		if *(*float64)(unsafe.Pointer(pinned)) < JacobiTol {
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

// jacobiPairs: first C's solver written in Go with the generated
// wrappers (SolveDriver), the floor of the rows after it. Then the solver
// in Go, with the residual wrapped and Use()d in each capture and with it
// in pinned memory, each against the solver in C; both run on the
// fixture's thread with its context current, as C's does, through
// Cached.RunCurrent, and the pinned one also through Cached.Run. Then the
// solver as examples/jacobi writes it, through package cuda on a goroutine
// not locked to its thread, with package cuda's Sync and with
// cuStreamSynchronize as the wait: against the rows before, what package
// cuda's layers cost a sweep, and what its wait does (its memset is
// Zero's cuMemsetD32Async, the others' cuMemsetD8Async: the same 8 bytes).
// A round is one solve; each side's sweeps are checked to be the same.
func (f *Fixture) jacobiPairs(c *C) []pair {
	mk := func(way string, wrapped, run bool) pair {
		return f.jacobiPair(c, way, func(j *Jacobi, pinned *float64, residual []float64) (int, error) {
			switch {
			case run:
				return j.SolveGoRun(f.Ctx, f.Stream, nil, pinned)
			case wrapped:
				return j.SolveGo(f.Ctx, f.Stream, residual, nil)
			}
			return j.SolveGo(f.Ctx, f.Stream, nil, pinned)
		}, nil)
	}
	// The sample's own way, through package cuda, with its wait and with
	// the driver's.
	viaCuda := func(way string, driverWait bool) pair {
		var cj *CudaJacobi
		var s *cuda.Stream
		var res *cuda.Pinned[float64]
		return f.jacobiPair(c, way, func(j *Jacobi, _ *float64, _ []float64) (int, error) {
			return cj.Solve(s, res, driverWait)
		}, func(b *testing.B, j *Jacobi) {
			var cuctx *cuda.Context
			cuctx, s = newStream(b)
			var err error
			res, err = cuda.Pin(cuctx, make([]float64, 1))
			must(b, err)
			b.Cleanup(func() { must(b, res.Free()) })
			cj, err = j.Cuda(cuctx)
			must(b, err)
			b.Cleanup(func() { must(b, cj.Close()) })
		})
	}
	floor := f.jacobiPair(c, "Go, C's driver calls alone through the generated wrappers (the floor)", func(j *Jacobi, pinned *float64, _ []float64) (int, error) {
		return j.SolveDriver(f.Stream, pinned)
	}, nil)
	return []pair{
		floor,
		mk("Go, wrapped residual Use()d in each capture", true, false),
		mk("Go, pinned residual", false, false),
		mk("Go, pinned residual, Cached.Run (asks for the contexts)", false, true),
		viaCuda("Go, package cuda as examples/jacobi (RunCached, Zero, Launch, CopyToHost to Pin, Sync)", false),
		viaCuda("Go, package cuda as examples/jacobi, waiting with cuStreamSynchronize", true),
	}
}

// jacobiPair is a Jacobi row: solve, one solve a round, against the
// solver in C; setup, if any, runs once the row's system is made.
func (f *Fixture) jacobiPair(c *C, way string, solve func(j *Jacobi, pinned *float64, residual []float64) (int, error), setup func(b *testing.B, j *Jacobi)) pair {
	var report func()
	return pair{report: func() { report() }, op: fmt.Sprintf("jacobi, n=%d, graph.Cached, solve", JacobiN), a: way, bName: "C, pinned residual", perRound: 1, pairs: 5,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			j, err := NewJacobi(JacobiN)
			must(b, err)
			b.Cleanup(func() { must(b, libcuda.WithContext(f.Ctx, j.Close)) })
			if setup != nil {
				setup(b, j)
			}
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
					n, err := solve(j, pinned, residual)
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
