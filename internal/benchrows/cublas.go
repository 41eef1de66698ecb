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
	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/libtypes"
)

//go:embed csrc/cublas.c
var cublasC []byte

// BLASC is the C half of the cuBLAS rows: cublas.c, compiled on the
// machine that runs them and loaded into this process, calling the same
// libcuda and libcublas that package cublas loaded.
type BLASC struct {
	sgemm  func(h cublas.Handle, s libcuda.Stream, m int32, a, b, c libcuda.Deviceptr, n int32, enqueue *int64) int32
	gemmEx func(h cublas.Handle, s libcuda.Stream, m int32, a, b, c libcuda.Deviceptr, t, compute, n int32) int32

	// The call-path rows of the small SGEMM (callpath.go).
	sgemm1   uintptr
	sgemmVar func(h cublas.Handle, s libcuda.Stream, m int32, a, b, c libcuda.Deviceptr, n, ctx int32, gap int, enqueue *int64) int32
}

// LoadBLASC compiles cublas.c with cc and loads it; done removes its files.
func LoadBLASC(cc string) (c *BLASC, done func(), err error) {
	if err := cublas.Load(); err != nil {
		return nil, nil, err
	}
	blas, _ := cublas.Loaded()
	drv, _ := libcuda.Loaded()
	dir, err := os.MkdirTemp("", "purecuda-cublas-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	src, so := filepath.Join(dir, "cublas.c"), filepath.Join(dir, "cublas.so")
	if err := os.WriteFile(src, cublasC, 0o644); err != nil {
		return nil, nil, err
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling cublas.c: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, nil, err
	}
	var initC func(cuda, blas string) int32
	purego.RegisterLibFunc(&initC, h, "pb_init")
	if initC(drv.Path, blas.Path) != 0 {
		return nil, nil, fmt.Errorf("cublas.c: a function is missing from %s or %s", drv.Path, blas.Path)
	}
	c = &BLASC{}
	purego.RegisterLibFunc(&c.sgemm, h, "pb_sgemm")
	purego.RegisterLibFunc(&c.gemmEx, h, "pb_gemmex")
	purego.RegisterLibFunc(&c.sgemmVar, h, "pb_sgemm_var")
	if c.sgemm1, err = purego.Dlsym(h, "pb_sgemm1"); err != nil {
		return nil, nil, err
	}
	return c, done, nil
}

// BLASRows are cuBLAS through package cublas against C calling the same
// function on the same handle, stream and memory, in alternate rounds:
// SGEMM and BF16 GEMM (BF16 in and out, float32 accumulation) at 4096³
// and 8192³, whose figure is TFLOP/s (Go's over C's: b-ns / a-ns), and a
// 64x64 SGEMM, 200 calls a round (fewer than the stream's queue holds),
// whose line "enqueue" gives the calls' host time alone, Go's and C's:
// their difference is package cublas's host overhead a call.
func (f *Fixture) BLASRows(c *BLASC) []Row {
	var rows []pair
	for _, m := range []int{4096, 8192} {
		rows = append(rows, f.gemmPair(c, "SGEMM", m, 5, false), f.gemmPair(c, "BF16 GEMM", m, 5, true))
	}
	rows = append(rows, f.gemmPair(c, "SGEMM", 64, 200, false))
	rows = append(rows, f.gemmCallPathPairs(c)...)
	var out []Row
	for _, p := range rows {
		out = append(out, p.row(f))
	}
	return append(out, f.gemmProfileRow())
}

// blasSetup makes a context, a stream and a cuBLAS handle on it with a
// workspace of 32 MiB, closed when the benchmark ends.
func blasSetup(b *testing.B) (*cuda.Stream, *cublas.BLAS) {
	s, h, _ := blasSetupWS(b)
	return s, h
}

// blasSetupWS is blasSetup that also gives the workspace.
func blasSetupWS(b *testing.B) (*cuda.Stream, *cublas.BLAS, cuda.Slice[byte]) {
	_, s := newStream(b)
	h, err := cublas.New(s)
	must(b, err)
	b.Cleanup(func() { must(b, h.Close()) })
	ws, err := cuda.Alloc[byte](s, 32<<20)
	must(b, err)
	must(b, h.SetWorkspace(ws))
	b.Cleanup(func() { must(b, ws.Free()) })
	return s, h, ws
}

// gemmProfileRow is the Go half of the 64x64 SGEMM row as a loop of
// rounds (200 calls, then a synchronize) for a CPU profile (see
// ProfilePrefix).
func (f *Fixture) gemmProfileRow() Row {
	return Row{Op: ProfilePrefix + "SGEMM 64x64 (host overhead)", Way: "cublas.Gemm", F: func(b *testing.B) {
		f.OnThread(b, func(b *testing.B) {
			const m = 64
			s, h := blasSetup(b)
			var x [3]cuda.Slice[float32]
			for i := range x {
				var err error
				x[i], err = cuda.Alloc[float32](s, m*m)
				must(b, err)
				b.Cleanup(func() { must(b, x[i].Free()) })
				must(b, cuda.Memset(s, x[i], 0.01))
			}
			for b.Loop() {
				for range 200 {
					must(b, cublas.Gemm(h, cublas.NoTrans, cublas.NoTrans, m, m, m, 1, x[0], m, x[1], m, 0, x[2], m))
				}
				must(b, libcuda.StreamSynchronize(s.Raw()))
			}
		})
	}}
}

// gemmPair multiplies two m x m matrices perRound times a round, then
// waits for the stream; bf16 multiplies libtypes.BFloat16 matrices through
// GemmEx, else float32 ones through Gemm.
func (f *Fixture) gemmPair(c *BLASC, name string, m, perRound int, bf16 bool) pair {
	op := fmt.Sprintf("%s %d³", name, m)
	if m < 1024 {
		op = fmt.Sprintf("%s %dx%d (host overhead)", name, m, m)
	}
	way, other := "cublas.Gemm", "C cublasSgemm_v2"
	if bf16 {
		way, other = "cublas.GemmEx", "C cublasGemmEx"
	}
	var goNs, cNs time.Duration
	var goN, cN int
	var goEnq, cEnq []float64 // per call, a round each, for the small row
	flops := 2 * float64(m) * float64(m) * float64(m)
	return pair{op: op, a: way, bName: other, perRound: perRound, pairs: 7,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			s, h := blasSetup(b)
			n := m * m
			// The rounds' totals, for TFLOP/s; the first round of each (the
			// harness's warm-up) is left out.
			timedRound := func(d *time.Duration, cnt *int, round func(int) error) func(int) error {
				first := true
				return func(k int) error {
					t0 := time.Now()
					err := round(k)
					if !first {
						*d += time.Since(t0)
						*cnt += k
					}
					first = false
					return err
				}
			}
			if bf16 {
				a, err := cuda.Alloc[libtypes.BFloat16](s, n)
				must(b, err)
				bb, err := cuda.Alloc[libtypes.BFloat16](s, n)
				must(b, err)
				cc, err := cuda.Alloc[libtypes.BFloat16](s, n)
				must(b, err)
				b.Cleanup(func() { must(b, a.Free()); must(b, bb.Free()); must(b, cc.Free()) })
				must(b, cuda.Memset(s, a, cuda.BFloat16Of(0.01)))
				must(b, cuda.Memset(s, bb, cuda.BFloat16Of(0.02)))
				goRound := func(k int) error {
					for range k {
						if err := cublas.GemmEx(h, cublas.NoTrans, cublas.NoTrans, m, m, m, 1, a, m, bb, m, 0, cc, m, cublas.CUBLAS_COMPUTE_32F); err != nil {
							return err
						}
					}
					return libcuda.StreamSynchronize(s.Raw())
				}
				cRound := func(k int) error {
					return cBLASErr(c.gemmEx(h.Raw(), s.Raw(), int32(m), a.DevicePtr(), bb.DevicePtr(), cc.DevicePtr(),
						int32(libtypes.CUDA_R_16BF), int32(cublas.CUBLAS_COMPUTE_32F), int32(k)))
				}
				return timedRound(&goNs, &goN, goRound), timedRound(&cNs, &cN, cRound)
			}
			a, err := cuda.Alloc[float32](s, n)
			must(b, err)
			bb, err := cuda.Alloc[float32](s, n)
			must(b, err)
			cc, err := cuda.Alloc[float32](s, n)
			must(b, err)
			b.Cleanup(func() { must(b, a.Free()); must(b, bb.Free()); must(b, cc.Free()) })
			must(b, cuda.Memset(s, a, 0.01))
			must(b, cuda.Memset(s, bb, 0.02))
			goRound := func(k int) error {
				t0 := time.Now()
				for range k {
					if err := cublas.Gemm(h, cublas.NoTrans, cublas.NoTrans, m, m, m, 1, a, m, bb, m, 0, cc, m); err != nil {
						return err
					}
				}
				goEnq = append(goEnq, float64(time.Since(t0).Nanoseconds())/float64(k))
				return libcuda.StreamSynchronize(s.Raw())
			}
			cRound := func(k int) error {
				var enq int64
				err := cBLASErr(c.sgemm(h.Raw(), s.Raw(), int32(m), a.DevicePtr(), bb.DevicePtr(), cc.DevicePtr(), int32(k), &enq))
				cEnq = append(cEnq, float64(enq)/float64(k))
				return err
			}
			return timedRound(&goNs, &goN, goRound), timedRound(&cNs, &cN, cRound)
		},
		report: func() {
			if goN > 0 && cN > 0 && m >= 1024 {
				fmt.Fprintf(os.Stderr, "%s: Go %.1f TFLOP/s, C %.1f TFLOP/s\n", op,
					flops*float64(goN)/goNs.Seconds()/1e12, flops*float64(cN)/cNs.Seconds()/1e12)
			}
			if len(goEnq) > 1 && len(cEnq) > 1 {
				g, cc := median(goEnq[1:]), median(cEnq[1:]) // the warm-up round left out
				fmt.Fprintf(os.Stderr, "%s: enqueue Go %.0f ns/call, C %.0f ns/call, Go-C %+.0f ns\n", op, g, cc, g-cc)
			}
		}}
}

// cBLASErr is a cuBLAS status (or a CUresult from the final wait) of the
// C half as an error.
func cBLASErr(r int32) error {
	if r != 0 {
		return fmt.Errorf("cublas.c: status %d", r)
	}
	return nil
}
