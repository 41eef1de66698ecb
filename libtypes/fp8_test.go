package libtypes_test

import (
	"math"
	"testing"

	"github.com/purecuda/purecuda/libtypes"
)

// Every finite FP8 value converts to float32 and back to itself; the
// formats' landmarks have their documented values; rounding is to the
// nearest, ties to even, and saturates.
func TestFloat8Conversions(t *testing.T) {
	for i := range 256 {
		x := libtypes.Float8E4M3(i)
		f := x.Float32()
		if f != f {
			if i&0x7f != 0x7f {
				t.Errorf("E4M3 %#02x is NaN", i)
			}
			continue
		}
		if g := libtypes.Float8E4M3Of(f); g != x && !(f == 0 && g&0x7f == 0) {
			t.Errorf("E4M3 %#02x -> %v -> %#02x", i, f, g)
		}
		y := libtypes.Float8E5M2(i)
		if g := y.Float32(); g == g && !math.IsInf(float64(g), 0) {
			if back := libtypes.Float8E5M2Of(g); back != y && !(g == 0 && back&0x7f == 0) {
				t.Errorf("E5M2 %#02x -> %v -> %#02x", i, g, back)
			}
		}
	}
	for _, c := range []struct {
		f    float32
		e4m3 libtypes.Float8E4M3
		e5m2 libtypes.Float8E5M2
	}{
		{1, 0x38, 0x3c}, {-2, 0xc0, 0xc0}, {448, 0x7e, 0x5f}, {1e6, 0x7e, 0x7b}, {57344, 0x7e, 0x7b},
		{float32(math.Inf(-1)), 0xfe, 0xfb},
		{0.001953125, 0x01, 0}, // E4M3's smallest subnormal, 2^-9 (E5M2 not checked here)
		{1.0625, 0x38, 0x3c},   // a tie between 1 and 1.125 (E4M3): to even (1)
		{1.1875, 0x3a, 0x3d},   // a tie between 1.125 and 1.25 (E4M3): to even (1.25); E5M2 1.1875 nearest 1.25
	} {
		if got := libtypes.Float8E4M3Of(c.f); got != c.e4m3 {
			t.Errorf("E4M3 of %v: %#02x, want %#02x", c.f, got, c.e4m3)
		}
		if c.f == 0.001953125 {
			continue // checked for E4M3 only
		}
		if got := libtypes.Float8E5M2Of(c.f); got != c.e5m2 {
			t.Errorf("E5M2 of %v: %#02x, want %#02x", c.f, got, c.e5m2)
		}
	}
	if f := libtypes.Float8E4M3(0x7e).Float32(); f != 448 {
		t.Errorf("E4M3 max %v", f)
	}
	if f := libtypes.Float8E5M2(0x7b).Float32(); f != 57344 {
		t.Errorf("E5M2 max %v", f)
	}
}
