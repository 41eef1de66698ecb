package cublaslt_test

import (
	"math"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
)

// refIn are the operands of refEx, as float64, laid out as the Op says
// (the Op already has its leading dimensions and strides filled in).
type refIn struct {
	alpha, beta    float64
	a, b, c        []float64
	bias, aux      []float64 // read by the _BIAS, and DGELU epilogues
	mask           []byte    // read by DRELU
	sa, sb, sc, sd float64   // FP8 scales (1 when not given)
}

// refOut is what refEx computes: D, and what the epilogue writes besides.
type refOut struct {
	d, aux, bias []float64
	mask         []byte
	amax         float64
}

func dgelu(x float64) float64 {
	const c = 0.7978845608028654
	u := c * (x + 0.044715*x*x*x)
	t := math.Tanh(u)
	return 0.5*(1+t) + 0.5*x*(1-t*t)*c*(1+3*0.044715*x*x)
}

// refEx is cuBLASLt's matmul on the host, in float64: every epilogue,
// batches, row-major order, the scales. auxLen and maskLen size the aux
// outputs.
func refEx(op cublaslt.Op, in refIn, dLen, auxLen, maskLen, biasLen int) refOut {
	out := refOut{d: make([]float64, dLen), aux: make([]float64, auxLen), mask: make([]byte, maskLen), bias: make([]float64, biasLen)}
	copy(out.mask, in.mask)
	at := func(ld, r, c int) int {
		if op.RowMajor {
			return r*ld + c
		}
		return r + c*ld
	}
	opA := func(base, i, k int) float64 {
		if op.TransA == cublas.NoTrans {
			return in.a[base+at(op.LDA, i, k)]
		}
		return in.a[base+at(op.LDA, k, i)]
	}
	opB := func(base, k, j int) float64 {
		if op.TransB == cublas.NoTrans {
			return in.b[base+at(op.LDB, k, j)]
		}
		return in.b[base+at(op.LDB, j, k)]
	}
	e := op.Epilogue
	batch := max(op.Batch, 1)
	for bt := range batch {
		ba, bb, bc := bt*op.StrideA, bt*op.StrideB, bt*op.StrideC
		aux0 := bt * op.AuxStride
		switch e {
		case cublaslt.CUBLASLT_EPILOGUE_BGRADA:
			for i := range op.M {
				for k := range op.K {
					out.bias[i] += opA(ba, i, k)
				}
			}
		case cublaslt.CUBLASLT_EPILOGUE_BGRADB:
			for j := range op.N {
				for k := range op.K {
					out.bias[j] += opB(bb, k, j)
				}
			}
		}
		for i := range op.M {
			grad := 0.0
			for j := range op.N {
				s := 0.0
				for k := range op.K {
					s += opA(ba, i, k) * opB(bb, k, j)
				}
				v := in.alpha * in.sa * in.sb * s
				if in.beta != 0 {
					v += in.beta * in.sc * in.c[bc+at(op.LDC, i, j)]
				}
				ai := aux0 + i + j*op.AuxLD
				switch e {
				case cublaslt.CUBLASLT_EPILOGUE_DRELU, cublaslt.CUBLASLT_EPILOGUE_DRELU_BGRAD:
					if in.mask[ai/8]>>(ai%8)&1 == 0 {
						v = 0
					}
				case cublaslt.CUBLASLT_EPILOGUE_DGELU, cublaslt.CUBLASLT_EPILOGUE_DGELU_BGRAD:
					v *= dgelu(in.aux[ai])
				default:
					if e&cublaslt.CUBLASLT_EPILOGUE_BIAS != 0 {
						v += in.bias[i]
					}
					if e == cublaslt.CUBLASLT_EPILOGUE_RELU_AUX || e == cublaslt.CUBLASLT_EPILOGUE_RELU_AUX_BIAS {
						if v > 0 {
							out.mask[ai/8] |= 1 << (ai % 8)
						} else {
							out.mask[ai/8] &^= 1 << (ai % 8)
						}
					}
					if e == cublaslt.CUBLASLT_EPILOGUE_GELU_AUX || e == cublaslt.CUBLASLT_EPILOGUE_GELU_AUX_BIAS {
						out.aux[ai] = v
					}
					if e&cublaslt.CUBLASLT_EPILOGUE_RELU != 0 {
						v = math.Max(v, 0)
					}
					if e&cublaslt.CUBLASLT_EPILOGUE_GELU != 0 {
						v = gelu(v)
					}
				}
				grad += v
				out.amax = math.Max(out.amax, math.Abs(v))
				out.d[bc+at(op.LDC, i, j)] = v * in.sd
			}
			if e == cublaslt.CUBLASLT_EPILOGUE_DRELU_BGRAD || e == cublaslt.CUBLASLT_EPILOGUE_DGELU_BGRAD {
				out.bias[i] = grad
			}
		}
	}
	return out
}

// f64 converts any of the element types to float64.
func f64[T float32 | float64](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// closeTo reports the first index where got is not within tol (relative
// to the largest |want|, at least 1) of want, or -1.
func closeTo(got, want []float64, tol float64) int {
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*scale {
			return i
		}
	}
	return -1
}

func halves(v []float32) []cuda.Half {
	out := make([]cuda.Half, len(v))
	for i, x := range v {
		out[i] = cuda.HalfOf(x)
	}
	return out
}

func halfValues(v []cuda.Half) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x.Float32())
	}
	return out
}

func bf16s(v []float32) []cuda.BFloat16 {
	out := make([]cuda.BFloat16, len(v))
	for i, x := range v {
		out[i] = cuda.BFloat16Of(x)
	}
	return out
}

func bf16Values(v []cuda.BFloat16) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x.Float32())
	}
	return out
}
