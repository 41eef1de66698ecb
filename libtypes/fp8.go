package libtypes

import (
	"math"
	"sort"
)

// Float8E4M3 is an 8-bit floating-point number in the E4M3 format (CUDA's
// __nv_fp8_e4m3, DataType CUDA_R_8F_E4M3): 1 sign bit, 4 exponent bits
// (bias 7), 3 fraction bits, no infinities, 0x7f and 0xff NaN; the
// largest finite value is 448. cuBLASLt's FP8 matmuls take it for A, B,
// C or D.
type Float8E4M3 uint8

// Float8E5M2 is an 8-bit floating-point number in the E5M2 format (CUDA's
// __nv_fp8_e5m2, DataType CUDA_R_8F_E5M2): 1 sign bit, 5 exponent bits
// (bias 15), 2 fraction bits — the upper byte of a Half — with infinities
// and NaNs; the largest finite value is 57344.
type Float8E5M2 uint8

// Float32 is x as a float32 (exactly).
func (x Float8E4M3) Float32() float32 {
	sign, exp, frac := x&0x80 != 0, int(x>>3)&0xf, float64(x&7)
	var v float64
	switch {
	case exp == 0xf && frac == 7:
		return float32(math.NaN())
	case exp == 0:
		v = math.Ldexp(frac/8, -6)
	default:
		v = math.Ldexp(1+frac/8, exp-7)
	}
	if sign {
		v = -v
	}
	return float32(v)
}

// Float32 is x as a float32 (exactly).
func (x Float8E5M2) Float32() float32 { return Half(uint16(x) << 8).Float32() }

// Float8E4M3Of rounds f to the nearest Float8E4M3 (ties to even),
// saturating: values beyond ±448, infinities included, become ±448 (as
// CUDA's __NV_SATFINITE conversion does); NaN stays NaN.
func Float8E4M3Of(f float32) Float8E4M3 {
	return Float8E4M3(round8(f, e4m3Table[:], 0x7f))
}

// Float8E5M2Of rounds f to the nearest Float8E5M2 (ties to even),
// saturating: finite values beyond ±57344 and infinities become ±57344;
// NaN stays NaN.
func Float8E5M2Of(f float32) Float8E5M2 {
	return Float8E5M2(round8(f, e5m2Table[:], 0x7e))
}

// The non-negative finite values of each format, by code (0 to the
// largest finite code): increasing, so that rounding is a search.
var e4m3Table, e5m2Table = func() (a [0x7f]float64, b [0x7c]float64) {
	for i := range a {
		a[i] = float64(Float8E4M3(i).Float32())
	}
	for i := range b {
		b[i] = float64(Float8E5M2(i).Float32())
	}
	return
}()

// round8 rounds f to the nearest value of table (the non-negative finite
// values by code), ties to the even code, saturating at the last; nan is
// the code of a NaN.
func round8(f float32, table []float64, nan uint8) uint8 {
	if f != f {
		return nan
	}
	var sign uint8
	v := float64(f)
	if v < 0 || v == 0 && math.Signbit(v) {
		sign, v = 0x80, -v
	}
	i := sort.SearchFloat64s(table, v) // the first value >= v
	switch {
	case i == len(table):
		i = len(table) - 1
	case i > 0 && table[i] != v:
		lo, hi := table[i-1], table[i]
		if v-lo < hi-v || v-lo == hi-v && (i-1)&1 == 0 {
			i--
		}
	}
	return sign | uint8(i)
}
