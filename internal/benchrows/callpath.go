//go:build linux

package bench

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/dl"
	"github.com/purecuda/purecuda/libcuda"
)

// The call-path rows split what a call from Go costs over the same call
// in a C loop, for a launch, a stream query and a 64x64 SGEMM, each
// against the C loop of the same calls:
//
//   - "Go→C per call": Go calls a C function that makes the one call,
//     through internal/dl as the generated wrappers do. Over the C loop,
//     this is the transition alone (runtime.cgocall), and whatever a
//     return to Go between calls does to the next call.
//   - "raw generated": the generated wrapper (libcuda.LaunchKernel,
//     libcuda.StreamQuery, cublas.Sgemm) with nothing of the Go layers;
//     for the SGEMM also with alpha and beta in a page outside Go's
//     memory (does the address of a host argument matter to the call?).
//   - "C, a gap after each": the C loop with a busy wait after each call,
//     the length of Go's own overhead: whether a pause between calls
//     alone makes the calls dearer (if so, a-b-ns exceeds the gap).
//   - "in a Stream.Do per call" (SGEMM): the raw wrapper inside
//     cuda.Stream.Do, with no operands (the stream's hold and the
//     context's check) or with the four of cublas.Gemm (their holds and
//     records too): cublas.Gemm less its checks and the handle's hold.
//   - "cublas.Gemm" (SGEMM) against "Go→C per call" rather than C's
//     loop: both halves pay the transition, so the difference is the Go
//     layers' own share (checks, holds, records, the context check);
//     against the raw wrapper, with and without cuBLAS's work between
//     the calls (m=n=k=0): what the layers cost with their data warm.
//   - "C, cuCtxGetCurrent before each" (SGEMM): what package cuda's
//     context check adds in C. A call of tens of ns, so the row is also
//     the gauge of the table's resolution: how far apart two C loops of
//     almost the same work come out on the machine.
//   - "C, a locked add before and after each" (query): whether two full
//     barriers a call, as runtime.cgocall's status changes are, explain
//     the transition's cost over the C loop.
//   - "empty C function": the bare transition, against a C loop of
//     calls through a pointer.

// cframe is an argument block of internal/dl for up to 8 words.
type cframe struct {
	dl.Frame
	a [8]uintptr
}

func (fr *cframe) call() int32 {
	fr.R = 0
	dl.Call(&fr.Frame)
	return int32(fr.R)
}

func (f *Fixture) callPathPairs(c *C) []pair {
	const launchOp, queryOp = "launch, 4 args, then a wait each 1000", "cuStreamQuery (idle)"
	launchRounds := func(b *testing.B) (libcuda.Func, libcuda.Deviceptr, func(int) error) {
		fn, buf := f.launchSetup(b)
		return fn, buf, func(n int) error {
			return cErr(c.launch4(fn.Handle(), f.Stream, uint64(buf), 0, uint64(buf+8), 0, n))
		}
	}
	query := func(n int) error { return cErr(c.streamQuery(f.Stream, n)) }
	return []pair{
		{op: launchOp, a: "call path: Go→C per call (dl.Call)", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				fn, buf, other := launchRounds(b)
				return func(n int) error {
					fr := cframe{Frame: dl.Frame{Fn: c.launch1, N: 6}, a: [8]uintptr{uintptr(fn.Handle()), uintptr(f.Stream), uintptr(buf), 0, uintptr(buf + 8), 0}}
					for range n {
						if r := fr.call(); r != 0 {
							return libcuda.Result(r)
						}
					}
					return libcuda.StreamSynchronize(f.Stream)
				}, other
			}},
		{op: launchOp, a: "call path: raw generated libcuda.LaunchKernel", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				fn, buf, other := launchRounds(b)
				return func(n int) error {
					args := [4]uint64{uint64(buf), 0, uint64(buf + 8), 0}
					params := [4]unsafe.Pointer{unsafe.Pointer(&args[0]), unsafe.Pointer(&args[1]), unsafe.Pointer(&args[2]), unsafe.Pointer(&args[3])}
					for range n {
						if err := libcuda.LaunchKernel(fn.Handle(), 1, 1, 1, 1, 1, 1, 0, f.Stream, &params[0], nil); err != nil {
							return err
						}
					}
					return libcuda.StreamSynchronize(f.Stream)
				}, other
			}},
		{op: launchOp, a: "call path: C, a 250 ns gap after each", bName: "C cuLaunchKernel", perRound: 1000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				fn, buf, other := launchRounds(b)
				return func(n int) error {
					return cErr(c.launch4Gap(fn.Handle(), f.Stream, uint64(buf), 0, uint64(buf+8), 0, n, 250))
				}, other
			}},
		{op: queryOp, a: "call path: Go→C per call (dl.Call)", bName: "C cuStreamQuery", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				return func(n int) error {
					fr := cframe{Frame: dl.Frame{Fn: c.query1, N: 1}, a: [8]uintptr{uintptr(f.Stream)}}
					for range n {
						if r := fr.call(); r != 0 {
							return libcuda.Result(r)
						}
					}
					return nil
				}, query
			}},
		{op: queryOp, a: "call path: C, a locked add before and after each", bName: "C cuStreamQuery", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				return func(n int) error { return cErr(c.queryLocked(f.Stream, n)) }, query
			}},
		{op: "empty C function", a: "call path: Go→C per call (dl.Call)", bName: "C loop", perRound: 20000, pairs: 21,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				return func(n int) error {
					fr := cframe{Frame: dl.Frame{Fn: c.empty}}
					for range n {
						if r := fr.call(); r != 0 {
							return libcuda.Result(r)
						}
					}
					return nil
				}, func(n int) error { return cErr(c.emptyLoop(n)) }
			}},
	}
}

// gemmCallPathPairs are the call-path rows of the 64x64 SGEMM: each way
// against C's loop (pb_sgemm) unless it names another, with the enqueue
// time of each printed as the SGEMM row's is.
func (f *Fixture) gemmCallPathPairs(c *BLASC) []pair {
	const m = 64
	// A round makes k calls on a pair's handle, stream, matrices and
	// workspace, and says how long they took to enqueue.
	type env struct {
		h  *cublas.BLAS
		s  *cuda.Stream
		x  [3]cuda.Slice[float32] // A, B, C
		ws cuda.Slice[byte]       // the handle's workspace
	}
	type round = func(e *env, k int) (enq int64, err error)
	type way struct {
		name  string
		round round
		// against is the other half of the pair, named vs: C's loop
		// (pb_sgemm) when nil.
		vs      string
		against round
	}
	// doRound makes each call of the round inside a Stream.Do of its own,
	// with nops of the operands A, B, C and the workspace: package
	// cublas's path less its checks and the handle's hold.
	doRound := func(nops int) round {
		return func(e *env, k int) (int64, error) {
			one, zero := float32(1), float32(0)
			raw := e.h.Raw()
			// Without operands the addresses are taken once, outside Do.
			pa, pb, pc := e.x[0].DevicePtr(), e.x[1].DevicePtr(), e.x[2].DevicePtr()
			t0 := time.Now()
			for range k {
				ops := [4]cuda.Operand{e.x[0].Operand(cuda.Read), e.x[1].Operand(cuda.Read), e.x[2].Operand(cuda.ReadWrite), e.ws.Operand(cuda.ReadWrite)}
				err := e.s.Do("bench", ops[:nops], func(libcuda.Stream) error {
					if nops > 0 {
						pa, pb, pc = ops[0].Ptr(), ops[1].Ptr(), ops[2].Ptr()
					}
					return cublas.Sgemm(raw, cublas.NoTrans, cublas.NoTrans, m, m, m, &one, f32(pa), m, f32(pb), m, &zero, f32(pc), m)
				})
				if err != nil {
					return 0, err
				}
			}
			return time.Since(t0).Nanoseconds(), nil
		}
	}
	cVar := func(ctx int32, gap int) round {
		return func(e *env, k int) (int64, error) {
			var enq int64
			err := cBLASErr(c.sgemmVar(e.h.Raw(), e.s.Raw(), m, e.x[0].DevicePtr(), e.x[1].DevicePtr(), e.x[2].DevicePtr(), int32(k), ctx, gap, &enq))
			return enq, err
		}
	}
	// viaDL is C's one call a multiplication, made from Go through
	// internal/dl: the floor of any call through runtime.cgocall.
	viaDL := func(e *env, k int) (int64, error) {
		fr := cframe{Frame: dl.Frame{Fn: c.sgemm1, N: 5}, a: [8]uintptr{uintptr(e.h.Raw()), m, uintptr(e.x[0].DevicePtr()), uintptr(e.x[1].DevicePtr()), uintptr(e.x[2].DevicePtr())}}
		t0 := time.Now()
		for range k {
			if r := fr.call(); r != 0 {
				return 0, cBLASErr(r)
			}
		}
		return time.Since(t0).Nanoseconds(), nil
	}
	// gemm and raw multiply d x d matrices stored with a leading
	// dimension of m: d = 0 makes cuBLAS return at once, so that the
	// difference is the Go layers' own work with nothing of cuBLAS's
	// between two calls.
	gemm := func(d int) round {
		return func(e *env, k int) (int64, error) {
			t0 := time.Now()
			for range k {
				if err := cublas.Gemm(e.h, cublas.NoTrans, cublas.NoTrans, d, d, d, 1, e.x[0], m, e.x[1], m, 0, e.x[2], m); err != nil {
					return 0, err
				}
			}
			return time.Since(t0).Nanoseconds(), nil
		}
	}
	// rawCalls is the raw wrapper's loop, alpha and beta at one and zero.
	rawCalls := func(e *env, k int, d int32, one, zero *float32) (int64, error) {
		pa, pb, pc := f32(e.x[0].DevicePtr()), f32(e.x[1].DevicePtr()), f32(e.x[2].DevicePtr())
		t0 := time.Now()
		for range k {
			if err := cublas.Sgemm(e.h.Raw(), cublas.NoTrans, cublas.NoTrans, d, d, d, one, pa, m, pb, m, zero, pc, m); err != nil {
				return 0, err
			}
		}
		return time.Since(t0).Nanoseconds(), nil
	}
	raw := func(d int32) round {
		return func(e *env, k int) (int64, error) {
			one, zero := float32(1), float32(0)
			return rawCalls(e, k, d, &one, &zero)
		}
	}
	const floor, rawName = "call path: Go→C per call (dl.Call)", "call path: raw generated cublas.Sgemm"
	ways := []way{
		{name: floor, round: viaDL},
		{name: rawName, round: raw(m)},
		{name: "call path: raw generated cublas.Sgemm, alpha and beta outside Go's memory", round: func(e *env, k int) (int64, error) {
			// A page of its own, neither Go's heap or stacks nor memory
			// the driver knows: does where alpha and beta live matter?
			page, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
			if err != nil {
				return 0, err
			}
			defer syscall.Munmap(page)
			one, zero := (*float32)(unsafe.Pointer(&page[0])), (*float32)(unsafe.Pointer(&page[64]))
			*one = 1
			return rawCalls(e, k, m, one, zero)
		}},
		{name: "call path: raw cublas.Sgemm in a Stream.Do per call, no operands", round: doRound(0)},
		{name: "call path: raw cublas.Sgemm in a Stream.Do per call, A, B, C and the workspace as operands", round: doRound(4)},
		{name: "call path: C, cuCtxGetCurrent before each", round: cVar(1, 0)},
		{name: "call path: C, a 1500 ns gap after each", round: cVar(0, 1500)},
		// The Go layers' own share, the transition in both halves.
		{name: "call path: cublas.Gemm", round: gemm(m), vs: floor, against: viaDL},
		// The same layers over the raw wrapper, with cuBLAS's work between
		// calls and without it: if the layers cost more beside the real
		// call, what they cost there is their data made cold by it.
		{name: "call path: cublas.Gemm over the raw wrapper", round: gemm(m), vs: rawName, against: raw(m)},
		{name: "call path: cublas.Gemm over the raw wrapper, m=n=k=0 (cuBLAS returns at once)", round: gemm(0), vs: rawName + ", m=n=k=0", against: raw(0)},
	}
	var out []pair
	for _, w := range ways {
		var aEnq, cEnq []float64
		op := fmt.Sprintf("SGEMM %dx%d (host overhead)", m, m)
		// A Go half waits for its round's work here; C's loop waits in C.
		goB := w.against != nil
		if !goB {
			w.vs, w.against = "C cublasSgemm_v2", cVar(0, 0)
		}
		out = append(out, pair{op: op, a: w.name, bName: w.vs, perRound: 200, pairs: 7,
			setup: func(b *testing.B) (func(int) error, func(int) error) {
				e := &env{}
				e.s, e.h, e.ws = blasSetupWS(b)
				for i := range e.x {
					var err error
					e.x[i], err = cuda.Alloc[float32](e.s, m*m)
					must(b, err)
					b.Cleanup(func() { must(b, e.x[i].Free()) })
					must(b, cuda.Memset(e.s, e.x[i], 0.01))
				}
				s := e.s
				return func(k int) error {
						enq, err := w.round(e, k)
						if err != nil {
							return err
						}
						aEnq = append(aEnq, float64(enq)/float64(k))
						return libcuda.StreamSynchronize(s.Raw())
					}, func(k int) error {
						enq, err := w.against(e, k)
						if err != nil {
							return err
						}
						cEnq = append(cEnq, float64(enq)/float64(k))
						if goB {
							return libcuda.StreamSynchronize(s.Raw())
						}
						return nil
					}
			},
			report: func() {
				if len(aEnq) > 1 && len(cEnq) > 1 {
					g, cc := median(aEnq[1:]), median(cEnq[1:])
					fmt.Fprintf(os.Stderr, "%s, %s: enqueue %.0f ns/call, %s %.0f ns/call, %+.0f ns\n", op, w.name, g, w.vs, cc, g-cc)
				}
			}})
	}
	return out
}

// f32 is a device address as the *float32 that cuBLAS's signatures take.
func f32(p libcuda.Deviceptr) *float32 { return *(**float32)(unsafe.Pointer(&p)) }
