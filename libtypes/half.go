package libtypes

import "math"

// Half is an IEEE 754 binary16 number (CUDA's __half): 1 sign bit, 5
// exponent bits, 10 fraction bits: the element type (as cuda.Slice[Half])
// that cuBLAS and cuBLASLt take for DataType R_16F. Package cuda names it
// too (cuda.Half is this type).
type Half uint16

// BFloat16 is a bfloat16 number (CUDA's __nv_bfloat16): the upper 16
// bits of a float32, 8 exponent bits and 7 fraction bits: the element type
// that cuBLAS and cuBLASLt take for DataType R_16BF. Package cuda names it
// too (cuda.BFloat16 is this type).
type BFloat16 uint16

// HalfOf rounds f to the nearest Half (ties to even); values beyond the
// range become infinities and NaN stays NaN.
func HalfOf(f float32) Half {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	switch {
	case exp == 0xff: // infinity or NaN
		if frac != 0 {
			return Half(sign | 0x7e00)
		}
		return Half(sign | 0x7c00)
	case exp-127 > 15: // overflows even before rounding
		return Half(sign | 0x7c00)
	case exp-127 >= -14: // normal
		h := uint32(exp-127+15)<<10 | frac>>13
		rest := frac & 0x1fff
		if rest > 0x1000 || rest == 0x1000 && h&1 != 0 {
			h++ // may carry into the exponent, up to infinity: right
		}
		return Half(sign | uint16(h))
	case exp-127 >= -25: // subnormal, or rounds to the smallest one
		m := frac | 0x800000 // the implicit bit
		shift := uint(-14-(exp-127)) + 13
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || rest == half && h&1 != 0 {
			h++
		}
		return Half(sign | uint16(h))
	}
	return Half(sign) // underflows to zero
}

// Float32 is h as a float32 (exactly).
func (h Half) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// BFloat16Of rounds f to the nearest BFloat16 (ties to even); NaN stays
// NaN.
func BFloat16Of(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it one (quiet)
		return BFloat16(b>>16 | 0x40)
	}
	rest := b & 0xffff
	h := b >> 16
	if rest > 0x8000 || rest == 0x8000 && h&1 != 0 {
		h++
	}
	return BFloat16(h)
}

// Float32 is b as a float32 (exactly).
func (b BFloat16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }
