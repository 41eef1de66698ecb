package curand_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A host generator gives, into Go slices, the numbers the device
// generator of the same kind, seed and offset gives: the raw ones bit for
// bit, the normal ones up to the last bits (the CPU's and the GPU's
// logarithm and sine may round differently).
func TestHostGeneratorMatchesTheDevice(t *testing.T) {
	f := newFixture(t)
	for _, kind := range []curand.RngType{curand.CURAND_RNG_PSEUDO_PHILOX4_32_10, curand.CURAND_RNG_PSEUDO_XORWOW} {
		h, err := curand.NewHost(kind)
		testenv.Must(t, err)
		defer func() { testenv.Must(t, h.Close()) }()
		testenv.Must(t, h.SetSeed(99))
		testenv.Must(t, h.SetOffset(4))
		host := make([]float32, 256)
		testenv.Must(t, curand.HostNormal(h, host, 0, 1))
		hostRaw := make([]uint32, 256)
		testenv.Must(t, h.SetOffset(4))
		testenv.Must(t, h.Uint32(hostRaw))

		g := f.gen(t, kind)
		testenv.Must(t, g.SetSeed(99))
		testenv.Must(t, g.SetOffset(4))
		dev := alloc[float32](t, f.s, 256)
		testenv.Must(t, curand.Normal(g, dev, 0, 1))
		for i, v := range download(t, f.s, dev) {
			if math.Abs(float64(v-host[i])) > 1e-5*(1+math.Abs(float64(v))) {
				t.Errorf("%v: normal [%d]: host %v, device %v", kind, i, host[i], v)
				break
			}
		}
		testenv.Must(t, g.SetOffset(4))
		devRaw := alloc[uint32](t, f.s, 256)
		testenv.Must(t, g.Uint32(devRaw))
		if got := download(t, f.s, devRaw); !slices.Equal(got, hostRaw) {
			t.Errorf("%v: raw: host %v..., device %v...", kind, hostRaw[:3], got[:3])
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
