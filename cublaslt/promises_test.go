package cublaslt_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// These tests hold package cublaslt to what its documentation promises,
// one promise a test, each failing when the promise breaks.

// bounded runs call on its own goroutine and fails the test if it does
// not return within testenv.Timeout: a call that blocks on a lock kept by
// an earlier failure fails the test instead of hanging it.
func bounded(t *testing.T, what string, call func() error) error {
	t.Helper()
	return testenv.Recv(t, testenv.WaitAsync(call), what)
}

// near fails t where got is not within tol of want.
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > tol {
			t.Fatalf("%s: D[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// A plan sets its bias pointer for each Matmul that brings another bias:
// the second vector on the same cached plan is the one added.
func TestASecondBiasOnTheSamePlanIsTheOneAdded(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 4, 3, 2
	ha, hb := randoms(m*k, 11), randoms(n*k, 12)
	bias1, bias2 := []float32{1, 2, 3, 4}, []float32{-10, 20, -30, 40}
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	b1, b2 := upload(t, f.s, bias1), upload(t, f.s, bias2)
	d := upload(t, f.s, make([]float32, m*n))
	z := make([]float32, m*n)
	op := cublaslt.Op{TransB: cublas.Trans, M: m, N: n, K: k, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BIAS}
	for i, bias := range []struct {
		dev  cuda.Slice[float32]
		host []float32
	}{{b1, bias1}, {b2, bias2}, {b1, bias1}} {
		testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, bias.dev))
		near(t, "Matmul "+string(rune('1'+i)), download(t, f.s, d), ref(op, 1, ha, hb, 0, z, bias.host), 1e-4)
	}
	if p := f.lt.Plans(); p != 1 {
		t.Errorf("%d plans for one Op, want 1", p)
	}
}

// A C too short is ErrShape even with beta 0 (a C given is checked; only
// the zero Slice stands for "no C"), and so is no C with beta not 0. A C
// that just fits is taken.
func TestCIsCheckedWheneverItIsGiven(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 16))
	c3 := upload(t, f.s, make([]float32, 3))
	c4 := upload(t, f.s, make([]float32, 4))
	op := cublaslt.Op{M: 2, N: 2, K: 2}
	if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0, c3, x, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), "C:") {
		t.Errorf("a C of 3 elements for 2x2, beta 0: %v, want ErrShape naming C", err)
	}
	if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0.5, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); !errors.Is(err, cuda.ErrNil) || !strings.Contains(err.Error(), "C") {
		t.Errorf("no C with beta 0.5: %v, want cuda.ErrNil naming C", err)
	}
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, x, x, 0, c4, x, cuda.Slice[float32]{}))
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, x, x, 1, c4, x, cuda.Slice[float32]{}))
	// D too short, and a bias that just fits or is one short.
	if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, c3, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) || !strings.Contains(err.Error(), "D:") {
		t.Errorf("a D of 3 elements: %v", err)
	}
	bop := cublaslt.Op{M: 4, N: 2, K: 2, Epilogue: cublaslt.CUBLASLT_EPILOGUE_RELU_BIAS}
	testenv.Must(t, cublaslt.Matmul(f.lt, bop, 1, x, x, 0, cuda.Slice[float32]{}, x, c4))
	if err := cublaslt.Matmul(f.lt, bop, 1, x, x, 0, cuda.Slice[float32]{}, x, c3); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("a bias of M-1 elements: %v", err)
	}
	// Without a _BIAS epilogue the bias is not used, nor checked.
	testenv.Must(t, cublaslt.Matmul(f.lt, cublaslt.Op{M: 4, N: 2, K: 2, Epilogue: cublaslt.CUBLASLT_EPILOGUE_RELU}, 1, x, x, 0, cuda.Slice[float32]{}, x, c3))
	// Exact sizes of A and B, transposed or not, and the leading
	// dimensions left to their defaults.
	for _, c := range []struct {
		name   string
		op     cublaslt.Op
		la, lb int
	}{
		{"A 3x2", cublaslt.Op{M: 3, N: 1, K: 2}, 6, 2},
		{"A^T, A 2x3", cublaslt.Op{TransA: cublas.Trans, M: 3, N: 1, K: 2}, 6, 2},
		{"B 2x3", cublaslt.Op{M: 1, N: 3, K: 2}, 2, 6},
		{"B^T, B 3x2 with ldB 4", cublaslt.Op{TransB: cublas.Trans, M: 1, N: 3, K: 2, LDB: 4}, 2, 7},
	} {
		a, err := x.Slice(0, c.la)
		testenv.Must(t, err)
		b, err := x.Slice(0, c.lb)
		testenv.Must(t, err)
		if err := cublaslt.Matmul(f.lt, c.op, 1, a, b, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); err != nil {
			t.Errorf("%s, Slices that just fit: %v", c.name, err)
		}
		a1, err := x.Slice(0, c.la-1)
		testenv.Must(t, err)
		b1, err := x.Slice(0, c.lb-1)
		testenv.Must(t, err)
		if err := cublaslt.Matmul(f.lt, c.op, 1, a1, b, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
			t.Errorf("%s, A one short: %v", c.name, err)
		}
		if err := cublaslt.Matmul(f.lt, c.op, 1, a, b1, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
			t.Errorf("%s, B one short: %v", c.name, err)
		}
	}
	for _, bad := range []cublaslt.Op{{M: 2, N: 0, K: 2}, {M: 2, N: 2, K: 0}, {M: -1, N: 2, K: 2}, {M: 2, N: 2, K: 2, TransB: 7}} {
		if err := cublaslt.Matmul(f.lt, bad, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
			t.Errorf("%+v: %v, want ErrShape", bad, err)
		}
	}
	if err := cublaslt.Matmul(f.lt, cublaslt.Op{M: 2, N: 2, K: 2, Compute: 12345}, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("an unknown compute type: %v, want ErrShape", err)
	}
}

// An Op's defaults (leading dimensions of the stored rows, the 32F
// compute type) name the same plan as the values written out, and give
// the same result; A transposed is read as such.
func TestOpDefaultsAreTheValuesWrittenOut(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 3, 2, 4
	// A^T stored k x m, B stored k x n.
	ha, hb := randoms(k*m, 21), randoms(k*n, 22)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	d := upload(t, f.s, make([]float32, m*n))
	want := make([]float32, m*n)
	for j := range n {
		for i := range m {
			s := 0.0
			for p := range k {
				s += float64(ha[p+i*k]) * float64(hb[p+j*k])
			}
			want[i+j*m] = float32(s)
		}
	}
	short := cublaslt.Op{TransA: cublas.Trans, M: m, N: n, K: k}
	long := cublaslt.Op{TransA: cublas.Trans, M: m, N: n, K: k, LDA: k, LDB: k, LDC: m,
		Compute: cublas.CUBLAS_COMPUTE_32F, Epilogue: cublaslt.CUBLASLT_EPILOGUE_DEFAULT}
	for _, op := range []cublaslt.Op{short, long} {
		testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
		near(t, "A^T B", download(t, f.s, d), want, 1e-4)
	}
	if p := f.lt.Plans(); p != 1 {
		t.Errorf("%d plans for one Op written two ways, want 1", p)
	}
	// A leading dimension beyond the rows is another plan, read as such:
	// A^T stored with ldA k+1.
	pad := make([]float32, (k+1)*m)
	for i := range m {
		copy(pad[i*(k+1):], ha[i*k:(i+1)*k])
	}
	ap := upload(t, f.s, pad)
	wide := short
	wide.LDA = k + 1
	testenv.Must(t, cublaslt.Matmul(f.lt, wide, 1, ap, b, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
	near(t, "A^T B with ldA k+1", download(t, f.s, d), want, 1e-4)
	if p := f.lt.Plans(); p != 2 {
		t.Errorf("%d plans, want 2", p)
	}
}

// Matmul records A, B, C and the bias as read and D (and the workspace)
// as written: a read of D on another stream waits for it, a read of the
// inputs does not.
func TestMatmulRecordsWhatItWritesAndWhatItReads(t *testing.T) {
	testenv.OnPrimary(t, 0) // for the gate
	f := newFixture(t)
	testenv.Must(t, hostmem.Drain(testenv.Context(t)))
	home, err := f.ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, home.Close()) })
	a, b := upload(t, home, []float32{1, 2, 3, 4}), upload(t, home, []float32{1, 0, 0, 1})
	c, bias := upload(t, home, []float32{1, 1, 1, 1}), upload(t, home, []float32{5, 6})
	d := upload(t, home, make([]float32, 4))
	ws, err := cuda.Alloc[byte](home, 1<<10)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Memset(home, ws, 0))
	testenv.Must(t, f.lt.SetWorkspace(ws))
	t.Cleanup(func() { testenv.Must(t, ws.Free()) })
	testenv.Must(t, home.Sync(testenv.Context(t)))
	op := cublaslt.Op{M: 2, N: 2, K: 2, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BIAS}
	gate := testenv.NewGate(t)
	gate.Hold(t, f.s.Raw())
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, a, b, 1, c, d, bias))
	stream := func() *cuda.Stream {
		s, err := f.ctx.NewStream(cuda.NonBlocking())
		testenv.Must(t, err)
		t.Cleanup(func() { testenv.Must(t, s.Close()) })
		return s
	}
	read := func(x cuda.Slice[float32], out []float32) <-chan error {
		s := stream()
		return testenv.WaitAsync(func() error { return cuda.CopyToHost(s, out, x) })
	}
	for name, x := range map[string]cuda.Slice[float32]{"A": a, "B": b, "C": c, "bias": bias} {
		testenv.Finished(t, "a read on another stream of "+name+", which Matmul only reads,", read(x, make([]float32, x.Len())))
	}
	got := make([]float32, 4)
	dDone := read(d, got)
	wsS := stream()
	wsDone := testenv.WaitAsync(func() error { return cuda.CopyToHost(wsS, make([]byte, ws.Len()), ws) })
	testenv.StillWaiting(t, "a read of D on another stream", dDone)
	testenv.StillWaiting(t, "a read of the workspace on another stream", wsDone)
	gate.Open()
	testenv.Finished(t, "the read of D", dDone)
	testenv.Finished(t, "the read of the workspace", wsDone)
	// D = A*I + C + bias, column-major: A = [[1 3] [2 4]].
	if want := []float32{7, 9, 9, 11}; !slices.Equal(got, want) {
		t.Errorf("D read on another stream = %v, want %v", got, want)
	}
}

// After Close, Matmul, SetWorkspace and Close fail with ErrClosed, at
// once and as often as they are called; a nil Lt is ErrNil everywhere.
func TestEveryCallAfterCloseIsClosedAndNeverBlocks(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, make([]float32, 4))
	lt, err := cublaslt.New(f.s)
	testenv.Must(t, err)
	op := cublaslt.Op{M: 2, N: 2, K: 2}
	testenv.Must(t, cublaslt.Matmul(lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
	testenv.Must(t, lt.Close())
	calls := func(lt *cublaslt.Lt) map[string]func() error {
		return map[string]func() error{
			"Matmul": func() error {
				return cublaslt.Matmul(lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{})
			},
			"SetWorkspace": func() error { return lt.SetWorkspace(cuda.Slice[byte]{}) },
			"Close":        lt.Close,
		}
	}
	for name, call := range calls(lt) {
		for i := range 2 {
			if err := bounded(t, name+" after Close", call); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("%s after Close (call %d): %v, want ErrClosed", name, i+1, err)
			}
		}
	}
	if lt.Raw() == 0 {
		t.Error("Raw after Close is 0: it should still name the handle")
	}
	var nilLt *cublaslt.Lt
	for name, call := range calls(nilLt) {
		if err := bounded(t, name+" on a nil Lt", call); !errors.Is(err, cuda.ErrNil) {
			t.Errorf("%s on a nil Lt: %v, want ErrNil", name, err)
		}
	}
	if nilLt.Raw() != 0 || nilLt.Plans() != 0 {
		t.Error("a nil Lt has a Raw or Plans")
	}
	if _, err := cublaslt.New(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("New(nil): %v", err)
	}
	// The fixture's Lt beside it still works.
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cuda.Slice[float32]{}))
}
