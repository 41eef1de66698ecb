//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// HostmemSizes are the sizes of the wrap rows.
var HostmemSizes = []int{4 << 10, 1 << 20, 64 << 20}

// CopyBytes is the size of the host-to-device copy row.
const CopyBytes = 256 << 20

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// drainB waits for hostmem's releases and unregisters.
func drainB(b *testing.B) {
	if err := hostmem.Drain(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// HostmemRows are package hostmem's rows.
func (f *Fixture) HostmemRows() []Row {
	var rows []Row
	for _, n := range HostmemSizes {
		// Distinct memory each time, so every wrap registers anew; after k
		// of them the releases are waited for and the k registrations
		// unregistered by Trim, which the time includes.
		k := max(4, (16<<20)/n)
		rows = append(rows, Row{Op: "register + unregister, " + sizeName(n), Way: "Wrap+Use+Free, Wait + Trim each " + fmt.Sprint(k), F: func(b *testing.B) {
			mems := faultedBuffers(k, n)
			f.OnThread(b, func(b *testing.B) {
				var waited, trimmed time.Duration
				rounds := 0
				for i := 0; i < b.N; i++ {
					f.cycle(b, mems[i%k], f.Stream)
					if i%k == k-1 {
						t0 := time.Now()
						must(b, hostmem.Wait(context.Background()))
						t1 := time.Now()
						hostmem.Trim()
						waited, trimmed = waited+t1.Sub(t0), trimmed+time.Since(t1)
						rounds++
					}
				}
				drainB(b)
				if rounds > 0 {
					b.ReportMetric(float64(waited.Nanoseconds()/int64(rounds)), "wait-ns/round")
					b.ReportMetric(float64(trimmed.Nanoseconds()/int64(rounds)), "trim-ns/round")
				}
			})
		}})
		// The same pattern through the binding alone, in the same run: k
		// distinct Go buffers registered, then unregistered together. The
		// ratio of the row above to this one is hostmem's own cost; the
		// second variant also records an event on the stream after each
		// register, as a use does, and waits for the stream before the
		// unregisters.
		for _, record := range []bool{false, true} {
			way := "libcuda register, unregister each " + fmt.Sprint(k)
			if record {
				way = "libcuda register + event record, unregister each " + fmt.Sprint(k)
			}
			rows = append(rows, Row{Op: "register + unregister, " + sizeName(n), Way: way, F: f.registerRow(n, k, record)})
		}
	}
	rows = append(rows, f.AlternateRows(f.bindingRound())...)
	rows = append(rows, Row{Op: "wrap again during a pending release, 1 MiB", Way: "Wrap+Use+Free", F: func(b *testing.B) {
		mem := make([]byte, 1<<20)
		f.OnThread(b, func(b *testing.B) {
			// A release held pending by a stream waiting on a host word.
			w := newHostWord(b)
			var held libcuda.Stream
			must(b, libcuda.StreamCreate(&held, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
			w.hold(b, held)
			f.cycle(b, mem, held)
			b.ResetTimer()
			for b.Loop() {
				f.cycle(b, mem, f.Stream)
			}
			b.StopTimer()
			w.open()
			must(b, libcuda.StreamSynchronize(held))
			must(b, libcuda.StreamDestroy(held))
			drainB(b)
			w.free(b)
		})
	}})
	rows = append(rows, Row{Op: "host to device copy, 256 MiB", Way: "from wrapped memory", F: func(b *testing.B) {
		mem := make([]byte, CopyBytes)
		f.OnThread(b, func(b *testing.B) {
			var d libcuda.Deviceptr
			must(b, libcuda.MemAlloc(&d, CopyBytes))
			buf, err := hostmem.Wrap(f.Ctx, mem)
			must(b, err)
			b.SetBytes(CopyBytes)
			b.ResetTimer()
			for b.Loop() {
				must(b, libcuda.MemcpyHtoDAsync(d, buf.Pointer(), CopyBytes, f.Stream))
				must(b, libcuda.StreamSynchronize(f.Stream))
			}
			b.StopTimer()
			must(b, buf.Use(f.Stream))
			must(b, buf.Free())
			drainB(b)
			must(b, libcuda.MemFree(d))
		})
	}})
	rows = append(rows, Row{Op: "GPU done -> retired, 1 MiB", Way: "hostmem", F: func(b *testing.B) {
		mem := make([]byte, 1<<20)
		f.OnThread(b, func(b *testing.B) {
			w := newHostWord(b)
			var total time.Duration
			for b.Loop() {
				w.close()
				w.hold(b, f.Stream)
				f.cycle(b, mem, f.Stream)
				t0 := time.Now()
				w.open()
				for hostmem.ReadStats().Pending > 0 {
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "latency-ns/op")
			drainB(b)
			w.free(b)
		})
	}})
	rows = append(rows, Row{Op: "trim -> dropped, 1 MiB", Way: "hostmem", F: func(b *testing.B) {
		mem := make([]byte, 1<<20)
		f.OnThread(b, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				f.cycle(b, mem, f.Stream)
				for hostmem.ReadStats().Pending > 0 {
				}
				t0 := time.Now()
				if n := hostmem.Trim(); n != 1 {
					b.Fatalf("Trim ended %d registrations", n)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "latency-ns/op")
		})
	}})
	return rows
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

// faultedBuffers returns k buffers of n bytes with their pages faulted in,
// as the C baseline's memset does.
func faultedBuffers(k, n int) [][]byte {
	mems := make([][]byte, k)
	for i := range mems {
		mems[i] = make([]byte, n)
		for j := 0; j < n; j += 4096 {
			mems[i][j] = 1
		}
	}
	return mems
}

// registerRow registers k distinct Go buffers of n bytes through the
// binding, then unregisters them, again and again; with record, each
// register is followed by an event record on the fixture's stream.
func (f *Fixture) registerRow(n, k int, record bool) func(b *testing.B) {
	return func(b *testing.B) {
		mems := faultedBuffers(k, n)
		flags := uint32(libcuda.CU_MEMHOSTREGISTER_PORTABLE | libcuda.CU_MEMHOSTREGISTER_DEVICEMAP)
		f.OnThread(b, func(b *testing.B) {
			var ev libcuda.Event
			must(b, libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)))
			unregister := func(upTo int) {
				if record {
					must(b, libcuda.StreamSynchronize(f.Stream))
				}
				for _, m := range mems[:upTo] {
					must(b, libcuda.MemHostUnregister(unsafe.Pointer(&m[0])))
				}
			}
			for i := 0; i < b.N; i++ {
				must(b, libcuda.MemHostRegister(unsafe.Pointer(&mems[i%k][0]), uint64(n), flags))
				if record {
					must(b, libcuda.EventRecord(ev, f.Stream))
				}
				if i%k == k-1 {
					unregister(k)
				}
			}
			unregister(b.N % k)
			must(b, libcuda.EventDestroy(ev))
		})
		runtime.KeepAlive(mems)
	}
}

// Round is one way to register and unregister k buffers of n bytes, for
// the alternate rows: it runs with the fixture's context current on a
// locked thread.
type Round struct {
	Name string
	Run  func(mems [][]byte, n int) error
}

// AlternateRows compare hostmem with another way, round by round on the
// same memory: one row per size of HostmemSizes.
func (f *Fixture) AlternateRows(other Round) []Row {
	var rows []Row
	for _, n := range HostmemSizes {
		k := min(max(4, (16<<20)/n), 256) // rounds short enough to alternate often
		rows = append(rows, Row{Op: "register + unregister, " + sizeName(n), Way: fmt.Sprintf("hostmem and %s in alternate rounds of %d", other.Name, k), F: f.alternateRow(n, k, other)})
	}
	return rows
}

// bindingRound registers the buffers through the binding and records an
// event after each register, as a use does; then it waits for the stream
// and unregisters them all, as a trim does.
func (f *Fixture) bindingRound() Round {
	flags := uint32(libcuda.CU_MEMHOSTREGISTER_PORTABLE | libcuda.CU_MEMHOSTREGISTER_DEVICEMAP)
	return Round{"libcuda", func(mems [][]byte, n int) (err error) {
		var ev libcuda.Event
		if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, libcuda.EventDestroy(ev)) }()
		for _, m := range mems {
			if err := libcuda.MemHostRegister(unsafe.Pointer(&m[0]), uint64(n), flags); err != nil {
				return err
			}
			if err := libcuda.EventRecord(ev, f.Stream); err != nil {
				return err
			}
		}
		if err := libcuda.StreamSynchronize(f.Stream); err != nil {
			return err
		}
		for _, m := range mems {
			if err := libcuda.MemHostUnregister(unsafe.Pointer(&m[0])); err != nil {
				return err
			}
		}
		return nil
	}}
}

// alternateRow runs pairs of rounds of k cycles on the same k buffers,
// one through hostmem (Wrap+Use+Free each, then Wait and Trim) and one
// the other way, which of the two goes first changing from pair to pair.
// It reports the time per cycle of each way, the ratio of the totals and
// the median of the pairs' ratios: hostmem's own cost, from the same
// memory in the same minutes, which the machine's drift does not blur.
func (f *Fixture) alternateRow(n, k int, other Round) func(b *testing.B) {
	return func(b *testing.B) {
		mems := faultedBuffers(k, n)
		f.OnThread(b, func(b *testing.B) {
			viaHostmem := func() time.Duration {
				t0 := time.Now()
				for _, m := range mems {
					f.cycle(b, m, f.Stream)
				}
				must(b, hostmem.Wait(context.Background()))
				if got := hostmem.Trim(); got != k {
					b.Fatalf("Trim ended %d registrations, want %d", got, k)
				}
				return time.Since(t0)
			}
			viaOther := func() time.Duration {
				t0 := time.Now()
				must(b, other.Run(mems, n))
				return time.Since(t0)
			}
			var totalHostmem, totalOther time.Duration
			var ratios []float64
			for pair := 0; pair*k < b.N; pair++ {
				var h, o time.Duration
				if pair%2 == 0 {
					h = viaHostmem()
					o = viaOther()
				} else {
					o = viaOther()
					h = viaHostmem()
				}
				totalHostmem, totalOther = totalHostmem+h, totalOther+o
				ratios = append(ratios, float64(h)/float64(o))
			}
			b.StopTimer()
			drainB(b)
			cycles := float64(len(ratios) * k)
			perHostmem := float64(totalHostmem.Nanoseconds()) / cycles
			b.ReportMetric(perHostmem, "hostmem-ns/op")
			b.ReportMetric(float64(totalOther.Nanoseconds())/cycles, other.Name+"-ns")
			b.ReportMetric(float64(totalHostmem)/float64(totalOther), "hostmem/"+other.Name)
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "hostmem/"+other.Name+"-median")
			b.ReportMetric(float64(len(ratios)), "pairs")
		})
		runtime.KeepAlive(mems)
	}
}

// StallRows measure the p99 duration of a kernel-launch call on one
// goroutine while the GPU is kept busy by another, without and with a
// wrap/use/free loop running beside them (metric p99-ns/op). With
// registrations retired instead of unregistered, the loop should make no
// unregister and so stall no launch. The other loops make one kind of the
// wrap loop's driver calls each, or only its Go allocations, to tell which
// of them holds launches; tools/bench's C baseline has the driver's own.
func (f *Fixture) StallRows() []Row {
	var rows []Row
	for _, l := range f.stallLoops() {
		rows = append(rows, Row{Op: "launch call p99, busy GPU", Way: l.name, F: func(b *testing.B) { f.stall(b, l) }})
	}
	return rows
}

// stallLoop is what runs beside the measured launches; body is called
// until the row ends, with the loop's own stream and event current.
type stallLoop struct {
	name string
	body func(s libcuda.Stream, ev libcuda.Event, i int) error
	// turns runs the loop in turns of turnLength, on and off, and compares
	// the launches timed in each: a ratio from the same stretch of time,
	// which the machine's drift between rows does not blur.
	turns bool
	// gcOff runs the row with the garbage collector off, to tell its part
	// in the stall from hostmem's.
	gcOff bool
}

const turnLength = 20 * time.Millisecond

// cycleSink keeps allocations the size of a wrap/use/free cycle's.
var cycleSink struct{ buffer, other []byte }

func (f *Fixture) stallLoops() []stallLoop {
	mems := make([][]byte, 8)
	for i := range mems {
		mems[i] = make([]byte, 64<<10)
	}
	var cur libcuda.Context
	var cs libcuda.StreamCaptureStatus
	cycle := func(s libcuda.Stream, _ libcuda.Event, i int) error { return f.tryCycle(mems[i%len(mems)], s) }
	var id, ctxID uint64
	perUse := func(s libcuda.Stream, ev libcuda.Event, _ int) error {
		return errors.Join(libcuda.StreamIsCapturing(s, &cs), libcuda.StreamGetId(s, &id), libcuda.EventRecord(ev, s))
	}
	var next time.Time
	return []stallLoop{
		{"without a loop", nil, false, false},
		{"with wrap/use/free loop", cycle, false, false},
		{"with wrap/use/free loop, a cycle per 50µs", func(s libcuda.Stream, _ libcuda.Event, i int) error {
			for time.Now().Before(next) {
				runtime.Gosched()
			}
			next = time.Now().Add(50 * time.Microsecond)
			return cycle(s, 0, i)
		}, false, false},
		{"wrap/use/free loop on and off in turns", cycle, true, false},
		{"wrap/use/free loop on and off in turns, GC off", cycle, true, true},
		// The same driver calls as Use makes on a stream it has an event
		// for (the C row "loop of hostmem's per-use calls in turns"),
		// without hostmem, and then with as many allocations of the same
		// sizes as a wrap/use/free cycle makes: what is left of the
		// stall beyond these is hostmem's own.
		{"Go loop of hostmem's per-use driver calls in turns", perUse, true, false},
		{"Go loop of hostmem's per-use driver calls and the cycle's allocations in turns", func(s libcuda.Stream, ev libcuda.Event, i int) error {
			cycleSink.buffer = make([]byte, 32) // a cycle's one: the Buffer
			return perUse(s, ev, i)
		}, true, false},
		{"with Go allocations only", func(libcuda.Stream, libcuda.Event, int) error {
			for range 12 {
				cycleSink.other = make([]byte, 48)
			}
			done := make(chan struct{})
			go close(done)
			<-done
			return nil
		}, false, false},
		{"with cuEventRecord loop", func(s libcuda.Stream, ev libcuda.Event, _ int) error {
			return libcuda.EventRecord(ev, s)
		}, false, false},
		{"with cuEventQuery loop", func(_ libcuda.Stream, ev libcuda.Event, _ int) error {
			return libcuda.EventQuery(ev)
		}, false, false},
		{"with cuStreamIsCapturing loop", func(s libcuda.Stream, _ libcuda.Event, _ int) error {
			return libcuda.StreamIsCapturing(s, &cs)
		}, false, false},
		{"with cuStreamGetCtx loop", func(s libcuda.Stream, _ libcuda.Event, _ int) error {
			return libcuda.StreamGetCtx(s, &cur)
		}, false, false},
		{"with cuCtxGetCurrent loop", func(libcuda.Stream, libcuda.Event, int) error {
			return libcuda.CtxGetCurrent(&cur)
		}, false, false},
		// Wrap asks it once, and the owner once a round per stream it
		// waits on (whether the context still exists).
		{"with cuCtxGetId loop", func(libcuda.Stream, libcuda.Event, int) error {
			return libcuda.CtxGetId(f.Ctx, &ctxID)
		}, false, false},
	}
}

func (f *Fixture) stall(b *testing.B, l stallLoop) {
	if l.gcOff {
		runtime.GC()
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	spin := f.spinKernel(b)
	r := &stallRun{l: l, done: make(chan error, 2), warm: make(chan struct{})}
	// Keep the GPU busy: 200µs kernels back to back on their own stream.
	go func() { r.done <- libcuda.WithContext(f.Ctx, func() error { return r.keepBusy(spin) }) }()
	// The launches are timed once the loop has run for a while: its steady
	// state, with hostmem's events pooled and its registrations revived.
	if l.body != nil {
		go func() { r.done <- libcuda.WithContext(f.Ctx, r.loop) }()
	} else {
		close(r.warm)
		r.done <- nil
	}
	<-r.warm
	st0 := hostmem.ReadStats()
	f.OnThread(b, func(b *testing.B) {
		var s libcuda.Stream
		must(b, libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)))
		t := r.timeLaunches(b, spin, s)
		b.StopTimer()
		r.stop.Store(true)
		for range 2 {
			must(b, <-r.done)
		}
		must(b, libcuda.StreamSynchronize(s))
		must(b, libcuda.StreamDestroy(s))
		b.ReportMetric(float64(percentile(t.on, 0.99).Nanoseconds()), "p99-ns/op")
		if l.turns {
			t.reportTurns(b)
		}
		b.ReportMetric(float64(percentile(t.on, 0.5).Nanoseconds()), "p50")
		if l.body != nil {
			r.reportReleases(b, st0)
		}
	})
	drainB(b)
}

// stallRun is one run of a stall row: the loop beside the timed launches
// and the GPU kept busy.
type stallRun struct {
	l      stallLoop
	stop   atomic.Bool
	done   chan error    // the busy kernels' and the loop's ends
	warm   chan struct{} // closed once the loop is in its steady state
	cycles atomic.Int64  // the loop's cycles since it was warm
	on     atomic.Bool   // in turns: the loop runs
}

// keepBusy launches 200µs kernels back to back on a stream of its own
// until the run stops; the thread has the context current.
func (r *stallRun) keepBusy(spin libcuda.Func) error {
	var s libcuda.Stream
	if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
		return err
	}
	for !r.stop.Load() {
		if err := spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, s, uint64(200*time.Microsecond)); err != nil {
			return err
		}
		if err := libcuda.StreamSynchronize(s); err != nil {
			return err
		}
	}
	return libcuda.StreamDestroy(s)
}

// loop runs the row's body until the run stops (in turns: while on),
// closes warm after 50 ms of it and counts its cycles from then on; the
// thread has the context current.
func (r *stallRun) loop() error {
	warmed := false
	defer func() {
		if !warmed { // failed or stopped first: the timed launches go on
			close(r.warm)
		}
	}()
	var s libcuda.Stream
	if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
		return err
	}
	var ev libcuda.Event
	if err := libcuda.EventCreate(&ev, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
		return err
	}
	start := time.Now()
	for i := 0; !r.stop.Load(); i++ {
		if warmed && r.l.turns && !r.on.Load() {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		if err := r.l.body(s, ev, i); err != nil && !errors.Is(err, libcuda.CUDA_ERROR_NOT_READY) {
			return err
		}
		switch {
		case warmed:
			r.cycles.Add(1)
		case time.Since(start) > 50*time.Millisecond:
			warmed = true
			close(r.warm) // counted from here on
		}
	}
	return errors.Join(libcuda.StreamSynchronize(s), libcuda.EventDestroy(ev), libcuda.StreamDestroy(s))
}

// stallTimes are the timed launches of a stall row.
type stallTimes struct {
	on      []time.Duration         // with the loop running (all of them, without turns)
	off     []time.Duration         // in turns: with the loop off
	perTurn map[int][]time.Duration // in turns: by turn
}

// timeLaunches times empty launches on s for the benchmark's loop, in
// turns switching the loop on and off.
func (r *stallRun) timeLaunches(b *testing.B, spin libcuda.Func, s libcuda.Stream) *stallTimes {
	t := &stallTimes{on: make([]time.Duration, 0, 1<<16), perTurn: map[int][]time.Duration{}}
	start, n := time.Now(), 0
	for b.Loop() {
		turn := time.Since(start)
		running := (turn/turnLength)%2 == 1
		if r.l.turns && r.on.Load() != running {
			r.on.Store(running)
		}
		t0 := time.Now()
		must(b, spin.Launch(libcuda.Dim3{X: 1}, libcuda.Dim3{X: 1}, 0, s, uint64(0)))
		d := time.Since(t0)
		switch {
		case !r.l.turns:
			t.on = append(t.on, d)
		case turn%turnLength < turnLength/10:
			// Settling after a switch: not counted.
		case running:
			t.on = append(t.on, d)
			t.perTurn[int(turn/turnLength)] = append(t.perTurn[int(turn/turnLength)], d)
		default:
			t.off = append(t.off, d)
			t.perTurn[int(turn/turnLength)] = append(t.perTurn[int(turn/turnLength)], d)
		}
		if n++; n%64 == 0 {
			must(b, libcuda.StreamSynchronize(s))
		}
	}
	return t
}

// reportTurns reports the p99 of the launches with the loop off, the
// ratio on/off, and the median of each on turn's p99 against the off turn
// just before it.
func (t *stallTimes) reportTurns(b *testing.B) {
	off := percentile(t.off, 0.99)
	b.ReportMetric(float64(off.Nanoseconds()), "p99-off")
	b.ReportMetric(float64(percentile(t.on, 0.99))/float64(off), "on/off")
	var ratios []float64
	for k, onDurs := range t.perTurn {
		if before, ok := t.perTurn[k-1]; k%2 == 1 && ok && len(onDurs) >= 100 && len(before) >= 100 {
			ratios = append(ratios, float64(percentile(onDurs, 0.99))/float64(percentile(before, 0.99)))
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "on/off-median")
		b.ReportMetric(float64(len(ratios)), "turn-pairs")
	}
}

// reportReleases reports what the releases made beside the launches since
// st0: hostmem's event queries and the owner's wake-ups (at most about one
// a millisecond each, whatever the loop's rate).
func (r *stallRun) reportReleases(b *testing.B, st0 hostmem.Stats) {
	st := hostmem.ReadStats()
	n := float64(r.cycles.Load())
	b.ReportMetric(float64(st.Unregisters-st0.Unregisters), "unregisters")
	b.ReportMetric(n, "loop-cycles")
	b.ReportMetric(float64(st.EventQueries-st0.EventQueries), "owner-queries")
	b.ReportMetric(float64(st.OwnerWakeups-st0.OwnerWakeups), "owner-wakeups")
	if n > 0 {
		b.ReportMetric(float64(st.EventQueries-st0.EventQueries)/n, "queries/cycle")
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// MultiGPURows copy from one wrapped buffer to two GPUs at once; compare
// with the one-GPU row "host to device copy, 256 MiB". They need devices 0
// and 1.
func (f *Fixture) MultiGPURows() []Row {
	return []Row{{Op: "host to device copy, 256 MiB", Way: "from wrapped memory to 2 GPUs at once", F: func(b *testing.B) {
		mem := make([]byte, CopyBytes)
		var dev1 libcuda.Device
		var ctx1 libcuda.Context
		must(b, libcuda.DeviceGet(&dev1, 1))
		must(b, libcuda.DevicePrimaryCtxRetain(&ctx1, dev1))
		defer func() { must(b, libcuda.DevicePrimaryCtxRelease(dev1)) }()
		buf, err := hostmem.Wrap(f.Ctx, mem)
		must(b, err)
		type side struct {
			ctx libcuda.Context
			s   libcuda.Stream
			d   libcuda.Deviceptr
		}
		sides := []*side{{ctx: f.Ctx}, {ctx: ctx1}}
		for _, sd := range sides {
			must(b, libcuda.WithContext(sd.ctx, func() error {
				if err := libcuda.StreamCreate(&sd.s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
					return err
				}
				return libcuda.MemAlloc(&sd.d, CopyBytes)
			}))
		}
		b.SetBytes(2 * CopyBytes)
		b.ResetTimer()
		for b.Loop() {
			errs := make(chan error, len(sides))
			for _, sd := range sides {
				go func() {
					errs <- libcuda.WithContext(sd.ctx, func() error {
						if err := libcuda.MemcpyHtoDAsync(sd.d, buf.Pointer(), CopyBytes, sd.s); err != nil {
							return err
						}
						return libcuda.StreamSynchronize(sd.s)
					})
				}()
			}
			for range sides {
				must(b, <-errs)
			}
		}
		b.StopTimer()
		for _, sd := range sides {
			must(b, buf.Use(sd.s))
		}
		must(b, buf.Free())
		drainB(b)
		for _, sd := range sides {
			must(b, libcuda.WithContext(sd.ctx, func() error {
				if err := libcuda.MemFree(sd.d); err != nil {
					return err
				}
				return libcuda.StreamDestroy(sd.s)
			}))
		}
	}}}
}

// cycle wraps mem, records a use on s and frees it.
func (f *Fixture) cycle(b *testing.B, mem []byte, s libcuda.Stream) {
	must(b, f.tryCycle(mem, s))
}

// tryCycle is cycle for goroutines that cannot fail b.
func (f *Fixture) tryCycle(mem []byte, s libcuda.Stream) error {
	buf, err := hostmem.Wrap(f.Ctx, mem)
	if err != nil {
		return err
	}
	if err := buf.Use(s); err != nil {
		return err
	}
	return buf.Free()
}

// hostWord is a word of pinned, mapped host memory that streams wait on
// until the host writes 1: a way to hold a stream for exactly as long as
// a benchmark wants. The fixture's context must be current.
type hostWord struct {
	host unsafe.Pointer
	dev  libcuda.Deviceptr
}

func newHostWord(b *testing.B) *hostWord {
	w := &hostWord{}
	must(b, libcuda.MemHostAlloc(&w.host, 64, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP)))
	w.close()
	must(b, libcuda.MemHostGetDevicePointer(&w.dev, w.host, 0))
	return w
}

func (w *hostWord) hold(b *testing.B, s libcuda.Stream) {
	must(b, libcuda.StreamWaitValue32(s, w.dev, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ)))
}
func (w *hostWord) open()             { atomic.StoreUint32((*uint32)(w.host), 1) }
func (w *hostWord) close()            { atomic.StoreUint32((*uint32)(w.host), 0) }
func (w *hostWord) free(b *testing.B) { must(b, libcuda.MemFreeHost(w.host)) }
