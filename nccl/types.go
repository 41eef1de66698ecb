package nccl

import (
	"math"

	"github.com/purecuda/purecuda/cuda"
)

// Element is an element type NCCL reduces and moves: the Go types of its
// integer and floating types, cuda.Half and cuda.BFloat16 for ncclFloat16
// and ncclBfloat16, and Float8E4M3 and Float8E5M2 for its FP8 types.
type Element interface {
	int8 | uint8 | int32 | uint32 | int64 | uint64 | float32 | float64 |
		cuda.Half | cuda.BFloat16 | Float8E4M3 | Float8E5M2
}

// TypeOf is NCCL's data type for T.
func TypeOf[T Element]() DataType {
	var z T
	switch any(z).(type) {
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int32:
		return Int32
	case uint32:
		return Uint32
	case int64:
		return Int64
	case uint64:
		return Uint64
	case float32:
		return Float32
	case float64:
		return Float64
	case cuda.Half:
		return Float16
	case cuda.BFloat16:
		return Bfloat16
	case Float8E4M3:
		return Float8e4m3
	default: // Float8E5M2
		return Float8e5m2
	}
}

// Float8E4M3 is an 8-bit float of NVIDIA's E4M3 format (ncclFloat8e4m3,
// __nv_fp8_e4m3): 1 sign bit, 4 exponent bits (bias 7), 3 fraction bits;
// no infinities, and all-ones exponent and fraction is NaN. Its range is
// ±448.
type Float8E4M3 uint8

// Float8E5M2 is an 8-bit float of NVIDIA's E5M2 format (ncclFloat8e5m2,
// __nv_fp8_e5m2): 1 sign bit, 5 exponent bits (bias 15), 2 fraction bits,
// with infinities and NaNs as in IEEE 754. Its range is ±57344.
type Float8E5M2 uint8

// Float32 is f as a float32 (exactly).
func (f Float8E4M3) Float32() float32 { return minifloat(uint8(f), 4, 3, 7, true) }

// Float32 is f as a float32 (exactly).
func (f Float8E5M2) Float32() float32 { return minifloat(uint8(f), 5, 2, 15, false) }

// Float8E4M3Of is the Float8E4M3 nearest to v (ties to even), saturated
// to ±448; NaN stays NaN.
func Float8E4M3Of(v float32) Float8E4M3 { return Float8E4M3(nearest(v, 4, 3, 7, true)) }

// Float8E5M2Of is the Float8E5M2 nearest to v (ties to even); values
// beyond its range become infinities, and NaN stays NaN.
func Float8E5M2Of(v float32) Float8E5M2 { return Float8E5M2(nearest(v, 5, 2, 15, false)) }

// minifloat decodes an 8-bit float of ebits exponent and mbits fraction
// bits; e4m3: no infinities, and the all-ones pattern is NaN.
func minifloat(b uint8, ebits, mbits, bias int, e4m3 bool) float32 {
	sign := b >> 7
	e := int(b>>mbits) & (1<<ebits - 1)
	f := int(b) & (1<<mbits - 1)
	emax := 1<<ebits - 1
	var v float64
	switch {
	case e4m3 && e == emax && f == 1<<mbits-1, !e4m3 && e == emax && f != 0:
		v = math.NaN()
	case !e4m3 && e == emax:
		v = math.Inf(1)
	case e == 0:
		v = math.Ldexp(float64(f), 1-bias-mbits)
	default:
		v = math.Ldexp(float64(f+1<<mbits), e-bias-mbits)
	}
	if sign != 0 {
		v = -v
	}
	return float32(v)
}

// nearest encodes v as the nearest 8-bit float of the format (ties to the
// even pattern) by comparing it with every finite pattern: 256 at most.
func nearest(v float32, ebits, mbits, bias int, e4m3 bool) uint8 {
	var sign uint8
	if math.Signbit(float64(v)) {
		sign = 0x80
	}
	x := math.Abs(float64(v))
	switch {
	case math.IsNaN(x):
		return sign | 0x7f
	case math.IsInf(x, 1) && !e4m3:
		return sign | uint8((1<<ebits-1)<<mbits)
	}
	best, bestd := uint8(0), math.Inf(1)
	for b := 0; b < 0x80; b++ {
		f := float64(minifloat(uint8(b), ebits, mbits, bias, e4m3))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		d := math.Abs(f - x)
		if d < bestd || d == bestd && b&1 == 0 {
			best, bestd = uint8(b), d
		}
	}
	if !e4m3 {
		// beyond the largest finite value by half a step or more: infinity
		top := float64(minifloat(uint8((1<<ebits-1)<<mbits-1), ebits, mbits, bias, e4m3))
		step := math.Ldexp(1, 1<<ebits-2-bias-mbits)
		if x >= top+step/2 {
			return sign | uint8((1<<ebits-1)<<mbits)
		}
	}
	return sign | best
}
