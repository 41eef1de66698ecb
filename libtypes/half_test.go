package libtypes_test

import (
	"math"
	"testing"

	"github.com/purecuda/purecuda/libtypes"
)

// Every Half converts to float32 and back to itself; every float32 rounds
// to the nearest Half, ties to even (checked against float64 arithmetic on
// the neighbours).
func TestHalfConversions(t *testing.T) {
	for i := range 1 << 16 {
		h := libtypes.Half(i)
		f := h.Float32()
		if f != f {
			if g := libtypes.HalfOf(f); g.Float32() == g.Float32() {
				t.Fatalf("NaN %#04x became %#04x", i, g)
			}
			continue
		}
		if g := libtypes.HalfOf(f); g != h {
			t.Fatalf("%#04x -> %v -> %#04x", i, f, g)
		}
	}
	for _, c := range []struct {
		f    float32
		want libtypes.Half
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, // smallest subnormal
		{2.9802322387695312e-08, 0x0000}, // half of it: a tie, to even (0)
		{8.940696716308594e-08, 0x0002},  // 1.5 of it: a tie, to even (2)
		{1 + 1.0/2048, 0x3c00},           // a tie between 1 and its successor: to even
		{1 + 3.0/2048, 0x3c02},           // a tie: to even, upwards
		{6.097555160522461e-05, 0x03ff},  // the largest subnormal
		{6.103515625e-05, 0x0400},        // the smallest normal
		{1e-10, 0}, {-1e-10, 0x8000},
	} {
		if got := libtypes.HalfOf(c.f); got != c.want {
			t.Errorf("HalfOf(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// BFloat16 keeps a float32's upper half, rounded to nearest, ties to even.
func TestBFloat16Conversions(t *testing.T) {
	for i := range 1 << 16 {
		b := libtypes.BFloat16(i)
		f := b.Float32()
		if f != f {
			continue
		}
		if g := libtypes.BFloat16Of(f); g != b {
			t.Fatalf("%#04x -> %v -> %#04x", i, f, g)
		}
	}
	for _, c := range []struct {
		bits uint32
		want libtypes.BFloat16
	}{
		{0x3f808000, 0x3f80}, // a tie: to even (down)
		{0x3f818000, 0x3f82}, // a tie: to even (up)
		{0x3f808001, 0x3f81},
		{0x7f7fffff, 0x7f80}, // the largest float32 rounds to infinity
	} {
		if got := libtypes.BFloat16Of(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("BFloat16Of(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
	if g := libtypes.BFloat16Of(float32(math.NaN())); g.Float32() == g.Float32() {
		t.Errorf("NaN became %#04x", g)
	}
}
