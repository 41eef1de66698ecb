package cuda

import "github.com/purecuda/purecuda/libtypes"

// Half is an IEEE 754 binary16 number (CUDA's __half), the element type of
// a Slice that the math libraries take for half precision. It is
// libtypes.Half, where its conversions live; the name here stays so that
// a program spells its Slices cuda.Slice[cuda.Half].
type Half = libtypes.Half

// BFloat16 is a bfloat16 number (CUDA's __nv_bfloat16), the element type
// of a Slice that the math libraries take for bfloat16. It is
// libtypes.BFloat16, where its conversions live.
type BFloat16 = libtypes.BFloat16

// HalfOf rounds f to the nearest Half (ties to even), as libtypes.HalfOf.
func HalfOf(f float32) Half { return libtypes.HalfOf(f) }

// BFloat16Of rounds f to the nearest BFloat16 (ties to even), as
// libtypes.BFloat16Of.
func BFloat16Of(f float32) BFloat16 { return libtypes.BFloat16Of(f) }
