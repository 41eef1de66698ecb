package cublas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// GemmBatchedEx multiplies each matrix of the Batches, which may sit in
// separate allocations or in parts of one.
func TestGemmBatchedExMatchesTheCPU(t *testing.T) {
	f := newFixture(t)
	const m, n, k, count = 3, 2, 4, 3
	var as, bs, cs []cuda.Slice[float32]
	var ha, hb, hc [][]float32
	whole := upload(t, f.s, make([]float32, count*m*n)) // C: parts of one allocation
	for i := range count {
		ha, hb = append(ha, randoms[float32](m*k, uint64(50+i))), append(hb, randoms[float32](k*n, uint64(60+i)))
		hc = append(hc, randoms[float32](m*n, uint64(70+i)))
		as, bs = append(as, upload(t, f.s, ha[i])), append(bs, upload(t, f.s, hb[i]))
		part, err := whole.Slice(i*m*n, (i+1)*m*n)
		testenv.Must(t, err)
		testenv.Must(t, cuda.CopyToDevice(f.s, part, hc[i]))
		cs = append(cs, part)
	}
	batch := func(xs []cuda.Slice[float32]) *cublas.Batch[float32] {
		b, err := cublas.NewBatch(f.s, xs)
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.MustBounded(t, "b.Free", b.Free) })
		return b
	}
	a, b, c := batch(as), batch(bs), batch(cs)
	testenv.Must(t, cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 2, a, m, b, k, 1, c, m, cublas.CUBLAS_COMPUTE_32F))
	got := download(t, f.s, whole)
	for i := range count {
		want := refGemm(cublas.NoTrans, cublas.NoTrans, m, n, k, 2, ha[i], m, hb[i], k, 1, hc[i], m)
		if j, ok := within(got[i*m*n:(i+1)*m*n], want, 1e-5); !ok {
			t.Fatalf("matrix %d: C[%d] = %v, want %v", i, j, got[i*m*n+j], want[j])
		}
	}

	// Shapes: the Batches' lengths, and each matrix.
	short := batch(as[:2])
	if err := cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, a, m, b, k, 0, short, m, cublas.CUBLAS_COMPUTE_32F); !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), "3, 3 and 2 matrices") {
		t.Errorf("Batches of different lengths: %v", err)
	}
	tiny := upload(t, f.s, make([]float32, 2))
	bad := batch([]cuda.Slice[float32]{as[0], tiny, as[2]})
	if err := cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, bad, m, b, k, 0, c, m, cublas.CUBLAS_COMPUTE_32F); !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), "A[1]") {
		t.Errorf("a short matrix: %v", err)
	}
	// A Slice of a Batch freed: the call is refused.
	gone, err := cuda.Alloc[float32](f.s, m*k)
	testenv.Must(t, err)
	withGone := batch([]cuda.Slice[float32]{as[0], as[1], gone})
	testenv.MustBounded(t, "gone.Free", gone.Free)
	if err := testenv.BoundedErr(t, "cublas.GemmBatchedEx", func() error {
		return cublas.GemmBatchedEx(f.h, cublas.NoTrans, cublas.NoTrans, m, n, k, 1, withGone, m, b, k, 0, c, m, cublas.CUBLAS_COMPUTE_32F)
	}); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("a freed Slice in a Batch: %v", err)
	}
}
