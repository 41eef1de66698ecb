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
	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/nccl"
)

//go:embed csrc/nccl.c
var ncclC []byte

// NCCLC is the C half of the NCCL rows: nccl.c, compiled on the machine
// that runs them and loaded into this process, calling the same libcuda
// and libnccl that packages cuda and nccl loaded.
type NCCLC struct {
	allReduce func(comm nccl.Handle, s libcuda.Stream, send, recv libcuda.Deviceptr, count uint64, n int32, enqueue *int64) int32
}

// LoadNCCLC compiles nccl.c with cc and loads it; done removes its files.
func LoadNCCLC(cc string) (c *NCCLC, done func(), err error) {
	if err := nccl.Load(); err != nil {
		return nil, nil, err
	}
	lib, _ := nccl.Loaded()
	drv, _ := libcuda.Loaded()
	dir, err := os.MkdirTemp("", "purecuda-nccl-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			done()
		}
	}()
	src, so := filepath.Join(dir, "nccl.c"), filepath.Join(dir, "nccl.so")
	if err := os.WriteFile(src, ncclC, 0o644); err != nil {
		return nil, nil, err
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("compiling nccl.c: %v\n%s", err, out)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, nil, err
	}
	var initC func(cuda, nccl string) int32
	purego.RegisterLibFunc(&initC, h, "pn_init")
	if initC(drv.Path, lib.Path) != 0 {
		return nil, nil, fmt.Errorf("nccl.c: a function is missing from %s or %s", drv.Path, lib.Path)
	}
	c = &NCCLC{}
	purego.RegisterLibFunc(&c.allReduce, h, "pn_allreduce")
	return c, done, nil
}

// NCCLRows are NCCL's all-reduce (float32 sum, out of place: at one rank
// NCCL does nothing in place) through package nccl against C calling
// ncclAllReduce on the same one-rank communicator, stream and memory, in
// alternate rounds, from 1 KiB to 1 GiB. Each row's figure is Go's time
// over C's; its report gives both bandwidths and, for the small sizes,
// each call's host time before the wait (enqueue), Go's and C's.
func (f *Fixture) NCCLRows(c *NCCLC) []Row {
	var out []Row
	for _, size := range []int{1 << 10, 32 << 10, 1 << 20, 32 << 20, 1 << 30} {
		out = append(out, f.allReducePair(c, size).row(f))
	}
	return out
}

func (f *Fixture) allReducePair(c *NCCLC, size int) pair {
	op := fmt.Sprintf("NCCL AllReduce %s, one rank", byteSize(size))
	perRound := max(2, min(200, (256<<20)/size))
	var goNs, cNs time.Duration
	var goN, cN int
	var goEnq, cEnq []float64
	return pair{op: op, a: "nccl.AllReduce", bName: "C ncclAllReduce", perRound: perRound, pairs: 7,
		setup: func(b *testing.B) (func(int) error, func(int) error) {
			_, s := newStream(b)
			id, err := nccl.NewUniqueID()
			must(b, err)
			devs, err := cuda.Devices()
			must(b, err)
			comm, err := nccl.InitRank(b.Context(), devs[0], 1, 0, id)
			must(b, err)
			b.Cleanup(func() { must(b, comm.Close()) })
			n := size / 4
			send, err := cuda.Alloc[float32](s, n)
			must(b, err)
			recv, err := cuda.Alloc[float32](s, n)
			must(b, err)
			b.Cleanup(func() { must(b, send.Free()); must(b, recv.Free()) })
			must(b, cuda.Memset(s, send, 1))
			first := map[*time.Duration]bool{&goNs: true, &cNs: true}
			timed := func(d *time.Duration, cnt *int, round func(int) error) func(int) error {
				return func(k int) error {
					t0 := time.Now()
					err := round(k)
					if !first[d] {
						*d += time.Since(t0)
						*cnt += k
					}
					first[d] = false
					return err
				}
			}
			goRound := func(k int) error {
				t0 := time.Now()
				for range k {
					if err := nccl.AllReduce(comm, s, send, recv, nccl.Sum); err != nil {
						return err
					}
				}
				goEnq = append(goEnq, float64(time.Since(t0).Nanoseconds())/float64(k))
				return libcuda.StreamSynchronize(s.Raw())
			}
			cRound := func(k int) error {
				var enq int64
				r := c.allReduce(comm.Raw(), s.Raw(), send.DevicePtr(), recv.DevicePtr(), uint64(n), int32(k), &enq)
				cEnq = append(cEnq, float64(enq)/float64(k))
				if r != 0 {
					return fmt.Errorf("nccl.c: status %d (1000+: ncclResult_t)", r)
				}
				return nil
			}
			return timed(&goNs, &goN, goRound), timed(&cNs, &cN, cRound)
		},
		report: func() {
			if goN > 0 && cN > 0 {
				gb := func(d time.Duration, k int) float64 { return float64(size) * float64(k) / d.Seconds() / 1e9 }
				fmt.Fprintf(os.Stderr, "%s: algbw Go %.2f GB/s, C %.2f GB/s (Go/C %.4f)\n", op, gb(goNs, goN), gb(cNs, cN), gb(goNs, goN)/gb(cNs, cN))
			}
			if len(goEnq) > 1 && len(cEnq) > 1 && size <= 1<<20 {
				g, cc := median(goEnq[1:]), median(cEnq[1:])
				fmt.Fprintf(os.Stderr, "%s: enqueue Go %.0f ns/call, C %.0f ns/call, Go-C %+.0f ns\n", op, g, cc, g-cc)
			}
		}}
}

// byteSize is 1 KiB, 32 MiB, 1 GiB.
func byteSize(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
