//go:build linux

package bench

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
	"github.com/purecuda/purecuda/curand"
	"github.com/purecuda/purecuda/libcuda"
)

//go:embed csrc/fftrand.c
var fftRandC []byte

// FFTRandC is the C half of the cuFFT and cuRAND rows: fftrand.c, compiled
// on the machine that runs them and loaded into this process, calling the
// same libcuda, libcufft and libcurand that packages cufft and curand
// loaded.
type FFTRandC struct {
	c2c    func(plan cufft.Handle, s libcuda.Stream, in, out libcuda.Deviceptr, n int32, enqueue *int64) int32
	r2c    func(plan cufft.Handle, s libcuda.Stream, in, out libcuda.Deviceptr, n int32) int32
	normal func(g curand.Handle, s libcuda.Stream, out libcuda.Deviceptr, count uint64, n int32) int32
}

// LoadFFTRandC compiles fftrand.c with cc and loads it; done removes its
// files.
func LoadFFTRandC(cc string) (c *FFTRandC, done func(), err error) {
	if err := cufft.Load(); err != nil {
		return nil, nil, err
	}
	if err := curand.Load(); err != nil {
		return nil, nil, err
	}
	fft, _ := cufft.Loaded()
	rnd, _ := curand.Loaded()
	drv, _ := libcuda.Loaded()
	dir, err := os.MkdirTemp("", "purecuda-fftrand-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	src, so := filepath.Join(dir, "fftrand.c"), filepath.Join(dir, "fftrand.so")
	if err := os.WriteFile(src, fftRandC, 0o644); err != nil {
		return nil, nil, err
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling fftrand.c: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, nil, err
	}
	var initC func(cuda, cufft, curand string) int32
	purego.RegisterLibFunc(&initC, h, "pf_init")
	if initC(drv.Path, fft.Path, rnd.Path) != 0 {
		return nil, nil, fmt.Errorf("fftrand.c: a function is missing from %s, %s or %s", drv.Path, fft.Path, rnd.Path)
	}
	c = &FFTRandC{}
	purego.RegisterLibFunc(&c.c2c, h, "pf_c2c")
	purego.RegisterLibFunc(&c.r2c, h, "pf_r2c")
	purego.RegisterLibFunc(&c.normal, h, "pf_normal")
	return c, done, nil
}

// FFTRandRows are cuFFT and cuRAND through packages cufft and curand
// against C calling the same functions on the same plan or generator,
// stream and memory, in alternate rounds: batched 1-D C2C (2^20 points x
// 64, 4096 x 4096), a 256³ R2C and 2^30 normal float32 from Philox, whose
// figures are the throughput ratios (Go's over C's: b-ns / a-ns), and a
// 256-point C2C, 200 calls a round, whose "enqueue" line gives the calls'
// host time alone, Go's and C's.
func (f *Fixture) FFTRandRows(c *FFTRandC) []Row {
	rows := []pair{
		f.c2cPair(c, "cuFFT C2C 2^20 x 64", 1<<20, 64, 3),
		f.c2cPair(c, "cuFFT C2C 4096 x 4096", 4096, 4096, 5),
		f.r2cPair(c, 256, 5),
		f.normalPair(c, 1<<30, 2),
		f.c2cPair(c, "cuFFT C2C 256 (host overhead)", 256, 1, 200),
	}
	var out []Row
	for _, p := range rows {
		out = append(out, p.row(f))
	}
	return out
}

// c2cPair transforms batch x n points forward, perRound times a round, out
// of place.
func (f *Fixture) c2cPair(c *FFTRandC, op string, n, batch, perRound int) pair {
	var goEnq, cEnq []float64
	return pair{op: op, a: "cufft.Plan.C2C", bName: "C cufftExecC2C", perRound: perRound, pairs: 7,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			_, s := newStream(b)
			p, err := cufft.NewPlan(s, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}, Batch: batch})
			must(b, err)
			b.Cleanup(func() { must(b, p.Close()) })
			in, err := cuda.Alloc[complex64](s, n*batch)
			must(b, err)
			out, err := cuda.Alloc[complex64](s, n*batch)
			must(b, err)
			b.Cleanup(func() { must(b, in.Free()); must(b, out.Free()) })
			must(b, cuda.Memset(s, in, 0)) // Memset repeats 4-byte patterns at most; the timing does not depend on the data
			goRound := func(k int) error {
				t0 := time.Now()
				for range k {
					if err := p.C2C(in, out, cufft.Forward); err != nil {
						return err
					}
				}
				goEnq = append(goEnq, float64(time.Since(t0).Nanoseconds())/float64(k))
				return libcuda.StreamSynchronize(s.Raw())
			}
			cRound := func(k int) error {
				var enq int64
				err := cStatus("fftrand.c", c.c2c(p.Raw(), s.Raw(), in.DevicePtr(), out.DevicePtr(), int32(k), &enq))
				cEnq = append(cEnq, float64(enq)/float64(k))
				return err
			}
			return goRound, cRound
		},
		report: func() {
			if perRound >= 100 && len(goEnq) > 1 && len(cEnq) > 1 {
				g, cc := median(goEnq[1:]), median(cEnq[1:])
				fmt.Fprintf(os.Stderr, "%s: enqueue Go %.0f ns/call, C %.0f ns/call, Go-C %+.0f ns\n", op, g, cc, g-cc)
			}
		}}
}

// r2cPair is a 3-D n³ R2C, perRound times a round.
func (f *Fixture) r2cPair(c *FFTRandC, n, perRound int) pair {
	return pair{op: fmt.Sprintf("cuFFT R2C %d³", n), a: "cufft.Plan.R2C", bName: "C cufftExecR2C", perRound: perRound, pairs: 7,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			_, s := newStream(b)
			p, err := cufft.NewPlan(s, cufft.CUFFT_R2C, cufft.Shape{N: []int{n, n, n}})
			must(b, err)
			b.Cleanup(func() { must(b, p.Close()) })
			in, err := cuda.Alloc[float32](s, n*n*n)
			must(b, err)
			out, err := cuda.Alloc[complex64](s, n*n*(n/2+1))
			must(b, err)
			b.Cleanup(func() { must(b, in.Free()); must(b, out.Free()) })
			must(b, cuda.Memset(s, in, 0.5))
			goRound := func(k int) error {
				for range k {
					if err := p.R2C(in, out); err != nil {
						return err
					}
				}
				return libcuda.StreamSynchronize(s.Raw())
			}
			cRound := func(k int) error {
				return cStatus("fftrand.c", c.r2c(p.Raw(), s.Raw(), in.DevicePtr(), out.DevicePtr(), int32(k)))
			}
			return goRound, cRound
		}}
}

// normalPair makes count normal float32 from Philox, perRound times a
// round.
func (f *Fixture) normalPair(c *FFTRandC, count, perRound int) pair {
	return pair{op: fmt.Sprintf("cuRAND normal float32 x %d (Philox)", count), a: "curand.Normal", bName: "C curandGenerateNormal",
		perRound: perRound, pairs: 7,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			_, s := newStream(b)
			g, err := curand.New(s, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
			must(b, err)
			b.Cleanup(func() { must(b, g.Close()) })
			out, err := cuda.Alloc[float32](s, count)
			must(b, err)
			b.Cleanup(func() { must(b, out.Free()) })
			goRound := func(k int) error {
				for range k {
					if err := curand.Normal(g, out, 0, 1); err != nil {
						return err
					}
				}
				return libcuda.StreamSynchronize(s.Raw())
			}
			cRound := func(k int) error {
				return cStatus("fftrand.c", c.normal(g.Raw(), s.Raw(), out.DevicePtr(), uint64(count), int32(k)))
			}
			return goRound, cRound
		}}
}

// cStatus is a library status (or a CUresult from the final wait) of a C
// half as an error.
func cStatus(what string, r int32) error {
	if r != 0 {
		return fmt.Errorf("%s: status %d", what, r)
	}
	return nil
}
