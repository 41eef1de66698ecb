// Command backend runs the core path of a Go machine-learning backend's
// step on the GPU, as a GoMLX- or ztensor-like backend would write it on
// purecuda, and checks it on the CPU:
//
//	Y[b] = R[b] + alpha * X[b] W,  b = 0..batch-1
//
// X is a batch of row-major M x K activations, W one row-major K x N
// weight shared by the whole batch (a broadcast operand), R the residual.
//
//   - The matmul is one cuBLAS strided-batched GEMM (cublas.GemmStridedBatched):
//     row-major matrices are column-major ones transposed, so Y^T = W^T X^T
//     is computed with the operands swapped, and W's stride of 0 repeats
//     it for every batch entry. No copy, no transpose kernel.
//
//   - The buffers come from a bucketed pool (buckets.go) on a driver pool
//     (cuda.MemPool): power-of-two size classes, reused with no driver
//     call and at the same address.
//
//   - The elementwise part (Y = alpha*T + Y) is a kernel embedded as PTX
//     (kernel.go), compiled by the driver when the module loads: no CUDA
//     compiler at build or run time.
//
//   - The whole step (the residual's copy, the GEMM, the kernel) is
//     captured once into a graph and replayed: each step is one
//     Stream.LaunchGraph. The program prints the Go allocations a step
//     makes.
//
//     go run ./examples/backend
//
// It prints "check: PASSED" or exits with status 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/examples/internal/sample"
)

const (
	batch, m, k, n = 8, 64, 128, 96
	alpha          = 0.5
	steps          = 100 // replays measured
	wsBytes        = 32 << 20
)

func main() { sample.Main("backend", func() error { return run(os.Stdout) }) }

func run(w io.Writer) (err error) {
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errors.New("no CUDA device")
	}
	ctx, err := devs[0].Context()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ctx.Close()) }()
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	mod, err := cuda.LoadModule(ctx, []byte(saxpyPTX))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	saxpy, err := mod.Func("saxpy")
	if err != nil {
		return err
	}

	pool, err := newBuckets[float32](devs[0])
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, pool.close()) }()
	h, err := cublas.New(s)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Close()) }()
	// A workspace of the handle's own, so that the captured GEMM needs no
	// allocation of cuBLAS's.
	ws, err := cuda.AllocFrom[byte](pool.pool, s, wsBytes)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ws.Free()) }()
	if err := h.SetWorkspace(ws); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.SetWorkspace(cuda.Slice[byte]{})) }()

	// The step's buffers, from the pool: inputs, weight, residual, the
	// matmul's result and the output.
	// The step's inputs and output, from the pool for the program's life;
	// each is a view of exactly its size on a buffer of its size class.
	var bufs [4]cuda.Slice[float32]
	for i, size := range []int{batch * m * k, k * n, batch * m * n, batch * m * n} {
		whole, err := pool.get(s, size)
		if err != nil {
			return err
		}
		defer pool.put(whole)
		if bufs[i], err = whole.Slice(0, size); err != nil {
			return err
		}
	}
	dx, dw, dr, dy := bufs[0], bufs[1], bufs[2], bufs[3]
	r := sample.NewRand()
	x, wt, res := randoms(r, batch*m*k), randoms(r, k*n), randoms(r, batch*m*n)
	for _, c := range []struct {
		dst cuda.Slice[float32]
		src []float32
	}{{dx, x}, {dw, wt}, {dr, res}} {
		if err := cuda.CopyToDevice(s, c.dst, c.src); err != nil {
			return err
		}
	}

	// Eagerly, as a backend runs a step before it has a graph of it: the
	// temporary T comes from the pool and goes back after each step (in
	// stream order: the next step's use of it follows this one's on s).
	for range 2 {
		whole, err := pool.get(s, batch*m*n)
		if err != nil {
			return err
		}
		dt, err := whole.Slice(0, batch*m*n)
		if err != nil {
			return err
		}
		if err := step(s, h, saxpy, dx, dw, dr, dt, dy); err != nil {
			return err
		}
		pool.put(whole)
	}
	if err := check(w, s, dy, x, wt, res); err != nil {
		return err
	}

	// The step, captured once. The graph holds T's address: T stays
	// taken from the pool while the graph lives.
	whole, err := pool.get(s, batch*m*n)
	if err != nil {
		return err
	}
	defer pool.put(whole)
	dt, err := whole.Slice(0, batch*m*n)
	if err != nil {
		return err
	}
	g, err := s.Capture(func(s *cuda.Stream) error {
		return step(s, h, saxpy, dx, dw, dr, dt, dy)
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Destroy()) }()
	nodes, err := g.Nodes()
	if err != nil {
		return err
	}
	e, err := g.Instantiate()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Destroy()) }()
	fmt.Fprintf(w, "step: Y[%d][%dx%d] = R + %v * X[%d][%dx%d] W[%dx%d], W broadcast; one graph of %d nodes\n",
		batch, m, n, alpha, batch, m, k, k, n, nodes)

	// Replay it: one launch a step, and count the Go allocations.
	if err := s.LaunchGraph(e); err != nil { // the first launch uploads the graph
		return err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range steps {
		if err := s.LaunchGraph(e); err != nil {
			return err
		}
	}
	runtime.ReadMemStats(&after)
	if err := sync(s); err != nil {
		return err
	}
	fmt.Fprintf(w, "replays: %d, Go allocations per step: %.2f\n", steps, float64(after.Mallocs-before.Mallocs)/steps)
	if err := check(w, s, dy, x, wt, res); err != nil {
		return err
	}

	// New inputs in the same buffers: the graph reads what is there now.
	x = randoms(r, batch*m*k)
	if err := cuda.CopyToDevice(s, dx, x); err != nil {
		return err
	}
	if err := s.LaunchGraph(e); err != nil {
		return err
	}
	if err := check(w, s, dy, x, wt, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "pool: %d buffers allocated from the driver pool, %d requests served by a buffer given back\n", pool.misses, pool.hits)
	fmt.Fprintln(w, "check: PASSED")
	return nil
}

// step is the work of one step on s: Y = R, T = X W (batched), Y += alpha*T.
func step(s *cuda.Stream, h *cublas.BLAS, saxpy *cuda.Func, dx, dw, dr, dt, dy cuda.Slice[float32]) error {
	if err := cuda.Copy(s, dy, dr); err != nil {
		return err
	}
	// Row-major T[b] (m x n) = X[b] (m x k) W (k x n) is column-major
	// T[b]^T (n x m) = W^T (n x k) X[b]^T (k x m): the same memory, read
	// column-major, with the operands swapped. W's stride 0 broadcasts it.
	if err := cublas.GemmStridedBatched(h, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
		float32(1), dw, n, 0, dx, k, m*k, float32(0), dt, n, m*n, batch); err != nil {
		return err
	}
	total := batch * m * n
	return s.Launch(saxpy, cuda.Grid((total+255)/256, 1, 1), cuda.Block(256, 1, 1),
		cuda.Int32(int32(total)), cuda.Float32(alpha), dt.Arg(), dy.Arg())
}

// check compares Y with the CPU's R + alpha * X W, computed in float64.
func check(w io.Writer, s *cuda.Stream, dy cuda.Slice[float32], x, wt, res []float32) error {
	y := make([]float32, batch*m*n)
	if err := cuda.CopyToHost(s, y, dy); err != nil {
		return err
	}
	worst := 0.0
	for b := range batch {
		for i := range m {
			for j := range n {
				var dot, mag float64
				for l := range k {
					p := float64(x[(b*m+i)*k+l]) * float64(wt[l*n+j])
					dot += p
					mag += math.Abs(p)
				}
				want := float64(res[(b*m+i)*n+j]) + alpha*dot
				e := math.Abs(float64(y[(b*m+i)*n+j])-want) / (1 + alpha*mag)
				worst = max(worst, e)
			}
		}
	}
	fmt.Fprintf(w, "largest error: %.2g (relative to the sum of |products|)\n", worst)
	if worst > 1e-5 {
		return fmt.Errorf("check: FAILED: error %.3g", worst)
	}
	return nil
}

func randoms(r *sample.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float() - 0.5
	}
	return v
}

func sync(s *cuda.Stream) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Sync(ctx)
}
