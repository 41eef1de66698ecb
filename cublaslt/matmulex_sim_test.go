//go:build !gpu

package cublaslt_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libtypes"
)

// A batch of row-major products with A in half precision, B in bfloat16
// broadcast to every product (stride 0), C and D float32, matches the
// host's product of the same rounded inputs.
func TestMatmulExBatchedRowMajorMixedInputs(t *testing.T) {
	f := newFixture(t)
	const m, n, k, batch = 3, 5, 4, 3
	ha, hb := halves(randoms(m*k*batch, 71)), bf16s(randoms(k*n, 72))
	hc := randoms(m*n*batch, 73)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	d := upload(t, f.s, make([]float32, m*n*batch))
	op := cublaslt.Op{M: m, N: n, K: k, RowMajor: true, Batch: batch, StrideA: m * k, StrideB: 0, StrideC: m * n}
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 2, a, b, -1, c, d, cublaslt.Extra[float32, float32]{}))
	op.LDA, op.LDB, op.LDC = k, n, n
	want := refEx(op, refIn{alpha: 2, beta: -1, a: halfValues(ha), b: bf16Values(hb), c: f64(hc), sa: 1, sb: 1, sc: 1, sd: 1},
		m*n*batch, 0, 0, 0)
	if i := closeTo(f64(download(t, f.s, d)), want.d, 1e-6); i >= 0 {
		t.Fatalf("D[%d] = %v, want %v", i, download(t, f.s, d)[i], want.d[i])
	}
}

// The bias may have a type of its own: a GELU_BIAS matmul with a half
// D and a float32 bias adds the float32 bias, and is a plan of its own
// beside the one with a half bias.
func TestMatmulExBiasType(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 4, 3, 2
	ha, hb := randoms(m*k, 81), randoms(k*n, 82)
	bias32 := []float32{0.5, -0.25, 1.5, -2}
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	d := upload(t, f.s, make([]cuda.Half, m*n))
	op := cublaslt.Op{M: m, N: n, K: k, Epilogue: cublaslt.CUBLASLT_EPILOGUE_GELU_BIAS}
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d,
		cublaslt.Extra[float32, float32]{Bias: upload(t, f.s, bias32)}))
	full := op
	full.LDA, full.LDB, full.LDC = m, k, m
	want := refEx(full, refIn{alpha: 1, a: f64(ha), b: f64(hb), bias: f64(bias32), sa: 1, sb: 1, sc: 1, sd: 1}, m*n, 0, 0, 0)
	if i := closeTo(halfValues(download(t, f.s, d)), want.d, 2e-3); i >= 0 {
		t.Fatalf("D[%d] = %v, want %v", i, download(t, f.s, d)[i].Float32(), want.d[i])
	}
	plans := f.lt.Plans()
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d,
		cublaslt.Extra[cuda.Half, float32]{Bias: upload(t, f.s, halves(bias32))}))
	if got := f.lt.Plans(); got != plans+1 {
		t.Errorf("%d plans after a half bias, want %d: the bias type is part of the plan", got, plans+1)
	}
}

// GELU_AUX_BIAS keeps GELU's input in Aux; DGELU_BGRAD reads it back,
// multiplies the incoming gradient by GELU's derivative there and writes
// the bias gradient (the sum of each row). The same with ReLU's mask
// (RELU_AUX_BIAS, then DRELU_BGRAD), and BGRADA/BGRADB sum A's rows and
// B's columns.
func TestMatmulExAuxEpiloguesForwardAndBackward(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 5, 3, 4
	const ld = 8 // M rounded up to 8
	ha, hb, bias := randoms(m*k, 91), randoms(k*n, 92), randoms(m, 93)
	a, b := upload(t, f.s, ha), upload(t, f.s, hb)
	base := cublaslt.Op{M: m, N: n, K: k, LDA: m, LDB: k, LDC: m}
	in := refIn{alpha: 1, a: f64(ha), b: f64(hb), bias: f64(bias), sa: 1, sb: 1, sc: 1, sd: 1}

	t.Run("GELU", func(t *testing.T) {
		d := upload(t, f.s, make([]float32, m*n))
		aux := upload(t, f.s, make([]float32, ld*n))
		fwd := base
		fwd.Epilogue, fwd.AuxLD = cublaslt.CUBLASLT_EPILOGUE_GELU_AUX_BIAS, ld
		testenv.Must(t, cublaslt.MatmulEx(f.lt, fwd, 1, a, b, 0, cuda.Slice[float32]{}, d,
			cublaslt.Extra[float32, float32]{Bias: upload(t, f.s, bias), Aux: aux}))
		want := refEx(fwd, in, m*n, ld*n, 0, 0)
		if i := closeTo(f64(download(t, f.s, d)), want.d, 1e-6); i >= 0 {
			t.Fatalf("forward D[%d]", i)
		}
		if i := closeTo(f64(download(t, f.s, aux)), want.aux, 1e-6); i >= 0 {
			t.Fatalf("aux[%d] = %v, want GELU's input %v", i, download(t, f.s, aux)[i], want.aux[i])
		}
		back := base
		back.Epilogue, back.AuxLD = cublaslt.CUBLASLT_EPILOGUE_DGELU_BGRAD, ld
		grad := upload(t, f.s, make([]float32, m))
		testenv.Must(t, cublaslt.MatmulEx(f.lt, back, 1, a, b, 0, cuda.Slice[float32]{}, d,
			cublaslt.Extra[float32, float32]{Bias: grad, Aux: aux}))
		bin := in
		bin.aux = want.aux
		wantBack := refEx(back, bin, m*n, 0, 0, m)
		if i := closeTo(f64(download(t, f.s, d)), wantBack.d, 1e-5); i >= 0 {
			t.Fatalf("DGELU D[%d] = %v, want %v", i, download(t, f.s, d)[i], wantBack.d[i])
		}
		if i := closeTo(f64(download(t, f.s, grad)), wantBack.bias, 1e-5); i >= 0 {
			t.Fatalf("bias gradient[%d] = %v, want %v", i, download(t, f.s, grad)[i], wantBack.bias[i])
		}
	})

	t.Run("ReLU", func(t *testing.T) {
		d := upload(t, f.s, make([]float32, m*n))
		mask := upload(t, f.s, make([]byte, 128*n/8))
		fwd := base
		fwd.Epilogue, fwd.AuxLD = cublaslt.CUBLASLT_EPILOGUE_RELU_AUX_BIAS, 128
		testenv.Must(t, cublaslt.MatmulEx(f.lt, fwd, 1, a, b, 0, cuda.Slice[float32]{}, d,
			cublaslt.Extra[float32, float32]{Bias: upload(t, f.s, bias), Mask: mask}))
		want := refEx(fwd, in, m*n, 0, 128*n/8, 0)
		if i := closeTo(f64(download(t, f.s, d)), want.d, 1e-6); i >= 0 {
			t.Fatalf("forward D[%d]", i)
		}
		got := download(t, f.s, mask)
		for i := range got {
			if got[i] != want.mask[i] {
				t.Fatalf("mask byte %d = %08b, want %08b", i, got[i], want.mask[i])
			}
		}
		back := base
		back.Epilogue, back.AuxLD = cublaslt.CUBLASLT_EPILOGUE_DRELU_BGRAD, 128
		grad := upload(t, f.s, make([]float32, m))
		testenv.Must(t, cublaslt.MatmulEx(f.lt, back, 1, a, b, 0, cuda.Slice[float32]{}, d,
			cublaslt.Extra[float32, float32]{Bias: grad, Mask: mask}))
		bin := in
		bin.mask = want.mask
		wantBack := refEx(back, bin, m*n, 0, len(want.mask), m)
		if i := closeTo(f64(download(t, f.s, d)), wantBack.d, 1e-6); i >= 0 {
			t.Fatalf("DRELU D[%d]", i)
		}
		if i := closeTo(f64(download(t, f.s, grad)), wantBack.bias, 1e-6); i >= 0 {
			t.Fatalf("bias gradient[%d]", i)
		}
	})

	for _, e := range []cublaslt.Epilogue{cublaslt.CUBLASLT_EPILOGUE_BGRADA, cublaslt.CUBLASLT_EPILOGUE_BGRADB} {
		t.Run(e.String(), func(t *testing.T) {
			op := base
			op.Epilogue = e
			l := m
			if e == cublaslt.CUBLASLT_EPILOGUE_BGRADB {
				l = n
			}
			d, grad := upload(t, f.s, make([]float32, m*n)), upload(t, f.s, make([]float32, l))
			testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, cublaslt.Extra[float32, float32]{Bias: grad}))
			want := refEx(op, in, m*n, 0, 0, l)
			if i := closeTo(f64(download(t, f.s, grad)), want.bias, 1e-6); i >= 0 {
				t.Fatalf("bias gradient[%d] = %v, want %v", i, download(t, f.s, grad)[i], want.bias[i])
			}
			if i := closeTo(f64(download(t, f.s, d)), want.d, 1e-6); i >= 0 {
				t.Fatalf("D[%d]", i)
			}
			// A gradient one element short is refused by name.
			short := upload(t, f.s, make([]float32, l-1))
			err := cublaslt.MatmulEx(f.lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, cublaslt.Extra[float32, float32]{Bias: short})
			var se *cublas.ShapeError
			if !errors.As(err, &se) || se.Arg != "bias" || se.Need != l || se.Len != l-1 || se.Pkg != "cublaslt" {
				t.Errorf("short gradient: %v (%+v)", err, se)
			}
		})
	}
}

// FP8: A in E4M3 (transposed), B in E5M2, C in bfloat16, D in E4M3, with
// the four scales and amax: D is the product of the decoded inputs
// scaled, rounded to E4M3, and amax the largest |result| before ScaleD.
func TestMatmulExFP8ScalesAndAmax(t *testing.T) {
	f := newFixture(t)
	const m, n, k = 4, 3, 8
	ra, rb, rc := randoms(k*m, 101), randoms(k*n, 102), randoms(m*n, 103)
	ha, hb := make([]libtypes.Float8E4M3, len(ra)), make([]libtypes.Float8E5M2, len(rb))
	va, vb := make([]float64, len(ra)), make([]float64, len(rb))
	for i, x := range ra {
		ha[i] = libtypes.Float8E4M3Of(4 * x)
		va[i] = float64(ha[i].Float32())
	}
	for i, x := range rb {
		hb[i] = libtypes.Float8E5M2Of(4 * x)
		vb[i] = float64(hb[i].Float32())
	}
	hc := bf16s(rc)
	a, b, c := upload(t, f.s, ha), upload(t, f.s, hb), upload(t, f.s, hc)
	d := upload(t, f.s, make([]libtypes.Float8E4M3, m*n))
	amax := upload(t, f.s, []float32{0})
	op := cublaslt.Op{TransA: cublas.Trans, M: m, N: n, K: k}
	x := cublaslt.Extra[float32, float32]{ScaleA: upload(t, f.s, []float32{0.5}), ScaleB: upload(t, f.s, []float32{0.25}),
		ScaleC: upload(t, f.s, []float32{2}), ScaleD: upload(t, f.s, []float32{8}), AmaxD: amax}
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0.5, c, d, x))
	full := op
	full.LDA, full.LDB, full.LDC = k, k, m
	want := refEx(full, refIn{alpha: 1, beta: 0.5, a: va, b: vb, c: bf16Values(hc), sa: 0.5, sb: 0.25, sc: 2, sd: 8}, m*n, 0, 0, 0)
	got := download(t, f.s, d)
	for i, w := range want.d {
		if g, r := got[i], libtypes.Float8E4M3Of(float32(w)); g != r {
			t.Fatalf("D[%d] = %v (%#02x), want %v rounded to E4M3, %v (%#02x)", i, g.Float32(), uint8(g), w, r.Float32(), uint8(r))
		}
	}
	if g := download(t, f.s, amax)[0]; float64(g) != float64(float32(want.amax)) {
		t.Errorf("amax %v, want %v", g, want.amax)
	}
	// Scales given make another plan than none; a scale Slice of no
	// element is refused.
	plans := f.lt.Plans()
	testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, a, b, 0.5, c, d, cublaslt.Extra[float32, float32]{}))
	if got := f.lt.Plans(); got != plans+1 {
		t.Errorf("%d plans, want %d: the scale pointers given are part of the plan", got, plans+1)
	}
	empty, err := x.ScaleA.Slice(0, 0)
	testenv.Must(t, err)
	x.ScaleA = empty
	var se *cublas.ShapeError
	if err := cublaslt.MatmulEx(f.lt, op, 1, a, b, 0.5, c, d, x); !errors.As(err, &se) || se.Arg != "ScaleA" {
		t.Errorf("an empty ScaleA: %v", err)
	}
}

// The heuristic's answers are listed, ranked; Op.Algo selects one, which
// the Matmul then runs (the stand-in's second algorithm asks for half the
// workspace, and that is the size the Matmul passes); a rank beyond the
// answers is an error.
func TestMatmulAlgorithmIsVisibleAndSelectable(t *testing.T) {
	f := newFixture(t)
	ws, err := cuda.Alloc[byte](f.s, 1<<12)
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ws.Free()) })
	testenv.Must(t, f.lt.SetWorkspace(ws))
	x := upload(t, f.s, randoms(16, 111))
	d := upload(t, f.s, make([]float32, 16))
	op := cublaslt.Op{M: 4, N: 4, K: 4}
	types := cublaslt.TypesOf[float32, float32, float32, float32]()
	algos, err := f.lt.Algorithms(op, types)
	testenv.Must(t, err)
	if len(algos) != 3 {
		t.Fatalf("%d algorithms, want the stand-in's 3", len(algos))
	}
	for i, a := range algos {
		if a.Rank != i || a.WorkspaceSize != uint64(ws.Len()>>i) || a.Algo.Data[0] != 0x5349+uint64(i) {
			t.Errorf("algorithm %d: %+v", i, a)
		}
	}
	op.Algo = 1
	testenv.Must(t, cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}))
	if got := testenv.BLASStat(t, "lt_ws_size"); got != int64(ws.Len()/2) {
		t.Errorf("the Matmul of Algo 1 passed a workspace of %d bytes, want the second algorithm's %d", got, ws.Len()/2)
	}
	chosen, err := f.lt.Chosen(op, types)
	testenv.Must(t, err)
	if chosen.Rank != 1 || chosen.Algo != algos[1].Algo {
		t.Errorf("Chosen: %+v, want %+v", chosen, algos[1])
	}
	heuristics := testenv.BLASStat(t, "heuristics")
	if _, err := f.lt.Chosen(op, types); err != nil || testenv.BLASStat(t, "heuristics") != heuristics {
		t.Errorf("Chosen again asked the heuristic again (%v)", err)
	}
	op.Algo = 5
	if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}); !errors.Is(err, cublas.ErrShape) {
		t.Errorf("Algo 5 of 3: %v", err)
	}
	op.Algo = cublaslt.MaxAlgos
	var se *cublas.ShapeError
	if err := cublaslt.Matmul(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, cuda.Slice[float32]{}); !errors.As(err, &se) || se.Arg != "Algo" {
		t.Errorf("Algo %d: %v", cublaslt.MaxAlgos, err)
	}
}

// Everything that changes the plan has a plan of its own; calling again
// with what a plan was made for asks the heuristic no more.
func TestMatmulExPlanKeys(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, randoms(256, 121))
	d := upload(t, f.s, make([]float32, 256))
	aux := upload(t, f.s, make([]float32, 256))
	mask := upload(t, f.s, make([]byte, 64))
	base := cublaslt.Op{M: 4, N: 4, K: 4}
	variants := []cublaslt.Op{base}
	add := func(change func(*cublaslt.Op)) {
		op := base
		change(&op)
		variants = append(variants, op)
	}
	add(func(op *cublaslt.Op) { op.Batch, op.StrideA, op.StrideB, op.StrideC = 2, 16, 16, 16 })
	add(func(op *cublaslt.Op) { op.Batch, op.StrideA, op.StrideB, op.StrideC = 2, 0, 16, 16 })
	add(func(op *cublaslt.Op) { op.RowMajor = true })
	add(func(op *cublaslt.Op) { op.FastAccum = true })
	add(func(op *cublaslt.Op) { op.Epilogue = cublaslt.CUBLASLT_EPILOGUE_GELU_AUX })
	add(func(op *cublaslt.Op) { op.Epilogue, op.AuxLD = cublaslt.CUBLASLT_EPILOGUE_GELU_AUX, 16 })
	add(func(op *cublaslt.Op) { op.Epilogue = cublaslt.CUBLASLT_EPILOGUE_RELU_AUX })
	for round := range 2 {
		before := testenv.BLASStat(t, "heuristics")
		for _, op := range variants {
			testenv.Must(t, cublaslt.MatmulEx(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d,
				cublaslt.Extra[float32, float32]{Aux: aux, Mask: mask}))
		}
		asked := testenv.BLASStat(t, "heuristics") - before
		if want := []int64{int64(len(variants)), 0}[round]; asked != want {
			t.Errorf("round %d: the heuristic asked %d times, want %d", round, asked, want)
		}
	}
	if got := f.lt.Plans(); got != len(variants) {
		t.Errorf("%d plans for %d Ops", got, len(variants))
	}
}

// The aux operands are checked: their leading dimension (at least M, a
// multiple of 8, of 128 bits for the mask), their length, a zero Slice
// (cuda.ErrNil), and row-major order, which the aux epilogues refuse.
func TestMatmulExAuxChecks(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, randoms(64, 131))
	d := upload(t, f.s, make([]float32, 64))
	aux := upload(t, f.s, make([]float32, 20))
	mask := upload(t, f.s, make([]byte, 64)) // 512 bits: 128x4 needs 3*128+4
	gelu := cublaslt.Op{M: 4, N: 4, K: 4, Epilogue: cublaslt.CUBLASLT_EPILOGUE_GELU_AUX}
	relu := cublaslt.Op{M: 4, N: 4, K: 4, Epilogue: cublaslt.CUBLASLT_EPILOGUE_DRELU}
	run := func(op cublaslt.Op, aux cuda.Slice[float32], mask cuda.Slice[byte]) error {
		return cublaslt.MatmulEx(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, cublaslt.Extra[float32, float32]{Aux: aux, Mask: mask})
	}
	var se *cublas.ShapeError
	for name, c := range map[string]struct {
		err error
		arg string
	}{
		"AuxLD 4":     {run(func() cublaslt.Op { op := gelu; op.AuxLD = 4; return op }(), aux, mask), "AuxLD"},
		"aux short":   {run(gelu, aux, mask), "Aux"}, // ld 8: 8*3+4 = 28 > 20
		"mask ld 64":  {run(func() cublaslt.Op { op := relu; op.AuxLD = 64; return op }(), aux, mask), "AuxLD"},
		"mask short":  {run(func() cublaslt.Op { op := relu; op.AuxLD = 256; return op }(), aux, mask), "Mask"},
		"row-major":   {run(func() cublaslt.Op { op := gelu; op.RowMajor = true; return op }(), aux, mask), "RowMajor"},
		"unknown Epi": {run(cublaslt.Op{M: 4, N: 4, K: 4, Epilogue: 3}, aux, mask), "Epilogue"},
	} {
		if !errors.As(c.err, &se) || se.Arg != c.arg {
			t.Errorf("%s: %v, want a ShapeError naming %s", name, c.err, c.arg)
		}
	}
	if err := run(relu, aux, cuda.Slice[byte]{}); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("no mask for DRELU: %v, want cuda.ErrNil", err)
	}
	if err := run(relu, aux, mask); err != nil {
		t.Errorf("DRELU with a mask of 512 bits for 128x4: %v", err)
	}
}

// A MatmulEx of a known plan with every extra operand allocates nothing.
func TestMatmulExAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, randoms(64, 141))
	d := upload(t, f.s, make([]float32, 64))
	one := upload(t, f.s, []float32{1})
	amax := upload(t, f.s, []float32{0})
	ex := cublaslt.Extra[float32, float32]{Bias: upload(t, f.s, make([]float32, 8)), Aux: upload(t, f.s, make([]float32, 64)),
		ScaleA: one, ScaleB: one, ScaleC: one, ScaleD: one, AmaxD: amax}
	op := cublaslt.Op{M: 8, N: 8, K: 8, Epilogue: cublaslt.CUBLASLT_EPILOGUE_GELU_AUX_BIAS, Batch: 1}
	n := testenv.AllocsPerRunMin(20, func() {
		if err := cublaslt.MatmulEx(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, d, ex); err != nil {
			t.Fatal(err)
		}
	})
	testenv.Must(t, f.s.Sync(testenv.Context(t)))
	if n != 0 {
		t.Errorf("%v allocations a MatmulEx", n)
	}
}

// After Close, MatmulEx, Algorithms and Chosen are ErrClosed.
func TestMatmulExAfterCloseIsClosed(t *testing.T) {
	f := newFixture(t)
	x := upload(t, f.s, randoms(16, 151))
	testenv.Must(t, f.lt.Close())
	op := cublaslt.Op{M: 4, N: 4, K: 4}
	if err := cublaslt.MatmulEx(f.lt, op, 1, x, x, 0, cuda.Slice[float32]{}, x, cublaslt.Extra[float32, float32]{}); !errors.Is(err, cublaslt.ErrClosed) {
		t.Errorf("MatmulEx: %v", err)
	}
	if _, err := f.lt.Algorithms(op, cublaslt.TypesOf[float32, float32, float32, float32]()); !errors.Is(err, cublaslt.ErrClosed) {
		t.Errorf("Algorithms: %v", err)
	}
	if _, err := f.lt.Chosen(op, cublaslt.TypesOf[float32, float32, float32, float32]()); !errors.Is(err, cublaslt.ErrClosed) {
		t.Errorf("Chosen: %v", err)
	}
}
