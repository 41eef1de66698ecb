//go:build gpu

package curand_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// ksLimit is the Kolmogorov–Smirnov statistic's critical value for n
// samples at a significance of 0.001 (1.95/√n): a generator that follows
// its distribution exceeds it once in a thousand seeds. The seeds are
// fixed, so the test's verdict is too.
func ksLimit(n int) float64 { return 1.95 / math.Sqrt(float64(n)) }

// ks is the statistic sup |F_n(x) - F(x)| of the sample x against cdf.
func ks(x []float64, cdf func(float64) float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	n := float64(len(x))
	d := 0.0
	for i, v := range x {
		f := cdf(v)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
	}
	return d
}

func normalCDF(mean, sd float64) func(float64) float64 {
	return func(x float64) float64 { return 0.5 * math.Erfc(-(x-mean)/(sd*math.Sqrt2)) }
}

// Every kind's uniform and normal streams pass a Kolmogorov–Smirnov test
// against their distributions.
func TestGPUUniformAndNormalPassKolmogorovSmirnov(t *testing.T) {
	f := newFixture(t)
	const n = 1 << 18
	for _, kind := range append(slices.Clone(pseudoKinds), curand.CURAND_RNG_QUASI_SOBOL32, curand.CURAND_RNG_QUASI_SCRAMBLED_SOBOL64) {
		t.Run(kind.String(), func(t *testing.T) {
			g := f.gen(t, kind)
			if curand.Pseudo(kind) {
				testenv.Must(t, g.SetSeed(20261207))
			}
			u := alloc[float32](t, f.s, n)
			z := alloc[float64](t, f.s, n)
			testenv.Must(t, curand.Uniform(g, u))
			testenv.Must(t, curand.Normal(g, z, 2, 0.5))
			uf := download(t, f.s, u)
			us := make([]float64, n)
			for i, v := range uf {
				if !(v > 0 && v <= 1) {
					t.Fatalf("Uniform[%d] = %v, outside (0, 1]", i, v)
				}
				us[i] = float64(v)
			}
			if d := ks(us, func(x float64) float64 { return min(max(x, 0), 1) }); d > ksLimit(n) {
				t.Errorf("uniform: KS statistic %.5f above %.5f", d, ksLimit(n))
			}
			if d := ks(download(t, f.s, z), normalCDF(2, 0.5)); d > ksLimit(n) {
				t.Errorf("normal(2, 0.5): KS statistic %.5f above %.5f", d, ksLimit(n))
			}
		})
	}
}

// Philox with a given seed and offset gives, bit for bit, the numbers that
// C calling cuRAND gives in the same run: raw, normal floats (passed by
// value in the floating-point registers) and normal doubles. The C program
// is testdata/philox_ref.c, built by the caller:
//
//	cc -O2 -o /tmp/philox_ref curand/testdata/philox_ref.c -ldl
//	PURECUDA_CURAND_REF=/tmp/philox_ref go test -tags gpu -run GPUPhilox ./curand
func TestGPUPhiloxEqualsC(t *testing.T) {
	ref := os.Getenv("PURECUDA_CURAND_REF")
	if ref == "" {
		t.Fatal("PURECUDA_CURAND_REF is not set: build curand/testdata/philox_ref.c (see this test's comment)")
	}
	f := newFixture(t)
	const seed, offset, n = 0x5eed1234, 1000, 1 << 16
	g := f.gen(t, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
	raw := alloc[uint32](t, f.s, n)
	nf := alloc[float32](t, f.s, n)
	nd := alloc[float64](t, f.s, n/2)
	for i, gen := range []func() error{
		func() error { return g.Uint32(raw) },
		func() error { return curand.Normal(g, nf, 1.5, 0.25) },
		func() error { return curand.Normal(g, nd, -2, 3) },
	} {
		testenv.Must(t, g.SetSeed(seed))
		testenv.Must(t, g.SetOffset(offset))
		if err := gen(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	var want bytes.Buffer
	for _, v := range [][]byte{bytesOf(t, download(t, f.s, raw)), bytesOf(t, download(t, f.s, nf)), bytesOf(t, download(t, f.s, nd))} {
		want.Write(v)
	}
	drv, _ := libcuda.Loaded()
	lib, ok := curand.Loaded()
	if !ok {
		t.Fatal("cuRAND is not loaded")
	}
	cmd := exec.Command(ref, drv.Path, lib.Path, "0x5eed1234", "1000", "65536")
	cmd.Stderr = os.Stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	if len(got) != want.Len() {
		t.Fatalf("C wrote %d bytes, Go made %d", len(got), want.Len())
	}
	names := []string{"raw uint32", "normal float32", "normal float64"}
	for part := range 3 {
		a, b := got[part*n*4:(part+1)*n*4], want.Bytes()[part*n*4:(part+1)*n*4]
		if i := firstDiff(a, b); i >= 0 {
			t.Errorf("%s: Go and C differ from byte %d", names[part], i)
		}
	}
}

func bytesOf[T any](t *testing.T, v []T) []byte {
	var b bytes.Buffer
	testenv.Must(t, binary.Write(&b, binary.LittleEndian, v))
	return b.Bytes()
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
