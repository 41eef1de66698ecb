//go:build !gpu

package curand_test

import (
	"math"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
)

// A host generator gives, into Go slices, the numbers the device
// generator of the same kind, seed and offset gives (the stand-in makes
// both the same way): the Go slices reach C whole, through the same
// entry points.
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
