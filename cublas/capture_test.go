package cublas_test

import (
	"fmt"
	gosync "sync"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A Gemm captured into a graph runs each time the graph is launched:
// C += A*B, launched 100 times, is C0 + 100*A*B.
func TestGemmInsideCaptureLaunched100Times(t *testing.T) {
	f := newFixture(t)
	ws, err := cuda.Alloc[byte](f.s, 4<<20)
	testenv.Must(t, err)
	testenv.Must(t, f.h.SetWorkspace(ws))
	t.Cleanup(func() {
		testenv.Must(t, f.h.SetWorkspace(cuda.Slice[byte]{}))
		testenv.MustBounded(t, "ws.Free", ws.Free)
	})
	const m, n, k, launches = 4, 3, 2, 100
	ha, hb, hc := randoms[float64](m*k, 9), randoms[float64](k*n, 10), randoms[float64](m*n, 11)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	testenv.MustBounded(t, "f.s.Sync", func() error { return f.s.Sync(testenv.Context(t)) })
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		return cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1.0, a, m, b, k, 1.0, c, m)
	})
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "g.Destroy", g.Destroy) }()
	e, err := g.Instantiate()
	testenv.Must(t, err)
	defer func() { testenv.MustBounded(t, "e.Destroy", e.Destroy) }()
	if got := download(t, f.s, c); fmt.Sprint(got) != fmt.Sprint(hc) {
		t.Fatalf("the capture ran the Gemm: C = %v", got)
	}
	for range launches {
		testenv.Must(t, f.s.LaunchGraph(e))
	}
	ab := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 1.0, ha, m, hb, k, 0, make([]float64, m*n), m)
	want := make([]float64, m*n)
	for i := range want {
		want[i] = hc[i] + launches*ab[i]
	}
	if i, ok := within(download(t, f.s, c), want, 1e-10); !ok {
		t.Fatalf("C[%d] after %d launches: got %v, want %v", i, launches, download(t, f.s, c)[i], want[i])
	}
}

// Eight goroutines, each with its own stream and handle, multiply at the
// same time; each gets its own right answer.
func TestGoroutinesWithTheirOwnHandles(t *testing.T) {
	f := newFixture(t)
	const workers, m = 8, 16
	var wg gosync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		s := newStream(t, f.ctx)
		h, err := cublas.New(s)
		testenv.Must(t, err)
		t.Cleanup(func() { closeBLAS(t, h) })
		ha, hb := randoms[float32](m*m, uint64(20+w)), randoms[float32](m*m, uint64(40+w))
		a, b, c := upload(t, s, ha), upload(t, s, hb), upload(t, s, make([]float32, m*m))
		want := refGemm(cublas.NoTrans, cublas.Trans, m, m, m, 1, ha, m, hb, m, 0, make([]float32, m*m), m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := cublas.Gemm(h, cublas.NoTrans, cublas.Trans, m, m, m, 1, a, m, b, m, 0, c, m); err != nil {
					errs <- err
					return
				}
			}
			got := make([]float32, m*m)
			if err := cuda.CopyToHost(s, got, c); err != nil {
				errs <- err
				return
			}
			if i, ok := within(got, want, 1e-5); !ok {
				errs <- fmt.Errorf("goroutine %d: C[%d] = %v, want %v", w, i, got[i], want[i])
			}
		}()
	}
	done := testenv.Go(wg.Wait)
	testenv.Recv(t, done, "the goroutines")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A Gemm with its operands on the stack allocates nothing.
func TestGemmAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	a := upload(t, f.s, make([]float32, 64*64))
	n := testing.AllocsPerRun(50, func() {
		if err := cublas.Gemm(f.h, cublas.NoTrans, cublas.NoTrans, 64, 64, 64, 1, a, 64, a, 64, 0, a, 64); err != nil {
			t.Fatal(err)
		}
	})
	testenv.MustBounded(t, "f.s.Sync", func() error { return f.s.Sync(testenv.Context(t)) })
	if n != 0 {
		t.Errorf("%v allocations a Gemm", n)
	}
}
