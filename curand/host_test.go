package curand_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A host generator gives the same numbers for the same seed, into Go
// slices, within the distribution's range.
func TestHostGeneratorSameSeedSameNumbers(t *testing.T) {
	draw := func(seed uint64) ([]float64, []uint32) {
		h, err := curand.NewHost(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
		testenv.Must(t, err)
		defer func() { testenv.Must(t, h.Close()) }()
		testenv.Must(t, h.SetSeed(seed))
		u := make([]float64, 128)
		testenv.Must(t, curand.HostUniform(h, u))
		r := make([]uint32, 128)
		testenv.Must(t, h.Uint32(r))
		return u, r
	}
	u1, r1 := draw(5)
	u2, r2 := draw(5)
	u3, _ := draw(6)
	if !slices.Equal(u1, u2) || !slices.Equal(r1, r2) {
		t.Fatalf("seed 5 twice gave different numbers")
	}
	if slices.Equal(u1, u3) {
		t.Fatalf("seeds 5 and 6 gave the same numbers")
	}
	for i, v := range u1 {
		if !(v > 0 && v <= 1) {
			t.Fatalf("HostUniform[%d] = %v", i, v)
		}
	}
}

// A host generator checks cuRAND's rules first too, and refuses use after
// Close.
func TestHostGeneratorRulesAndClose(t *testing.T) {
	h, err := curand.NewHost(curand.CURAND_RNG_QUASI_SOBOL32)
	testenv.Must(t, err)
	testenv.Must(t, h.SetDimensions(3))
	if err := curand.HostUniform(h, make([]float64, 4)); !errors.Is(err, curand.CURAND_STATUS_LENGTH_NOT_MULTIPLE) {
		t.Errorf("4 numbers of 3 dimensions: %v", err)
	}
	if err := h.SetSeed(1); !errors.Is(err, curand.CURAND_STATUS_TYPE_ERROR) {
		t.Errorf("a seed for Sobol32: %v", err)
	}
	out := make([]float64, 6)
	testenv.Must(t, curand.HostUniform(h, out))
	for i, v := range out {
		if !(v > 0 && v <= 1) {
			t.Errorf("HostUniform[%d] = %v", i, v)
		}
	}
	testenv.Must(t, curand.HostUniform(h, out[:0]))
	testenv.Must(t, h.Close())
	if err := curand.HostUniform(h, out); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := h.Close(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a second Close: %v", err)
	}
}
