//go:build !gpu && (linux || windows)

package hostmem_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
	"github.com/purecuda/purecuda/libcuda"
)

// Fault injection needs the simulator.

func TestUnregisterFailureIsLoggedOnceAndKeepsTheMemory(t *testing.T) {
	// By design the failed unregister keeps the memory registered for good: the test runs in a child
	// process, which ends with them, so that the leak check after the
	// package's tests (testenv.Main) stays exact.
	if !testenv.InChild(t) {
		return
	}
	errs := testenv.CaptureErrors(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(s))
	testenv.MustBounded(t, "b.Free", b.Free)
	testenv.Eventually(t, "released", func() bool { return hostmem.ReadStats().Pending == 0 })
	before := hostmem.ReadStats() // other tests may have kept memory already
	testenv.SimFailNext(t, "cuMemHostUnregister", 1, libcuda.CUDA_ERROR_UNKNOWN)
	if n := hostmem.Trim(); n != 1 {
		t.Fatalf("Trim ended %d registrations, want 1", n)
	}
	st := hostmem.ReadStats()
	if st.Failures != before.Failures+1 || st.Kept != before.Kept+1 || st.Registrations != 0 {
		t.Fatalf("after the failed unregister: %+v, before %+v; want 1 more failure and 1 more kept", st, before)
	}
	msgs := errs.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "addr=") || !strings.Contains(msgs[0], "size=8192") || !strings.Contains(msgs[0], "CUDA_ERROR_UNKNOWN") {
		t.Fatalf("logged %q, want one message with the address, size and error", msgs)
	}
	// Nothing else breaks.
	c, err := hostmem.Wrap(cu, make([]int32, 4096))
	testenv.Must(t, err)
	testenv.Must(t, c.Use(s))
	testenv.MustBounded(t, "c.Free", c.Free)
	memtest.Drain(t)
	if n := len(errs.Messages()); n != 1 {
		t.Fatalf("%d messages logged, want still 1", n)
	}
}

// The releases of buffers used on one stream share their event queries:
// work on a stream completes in order, so one completed event proves all
// those recorded before it on that stream complete. A thousand buffers
// freed behind a gate must cost far fewer queries than one each.
func TestReleasesOnOneStreamShareEventQueries(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	mems := make([][]byte, 8)
	for i := range mems {
		mems[i] = make([]byte, 8192)
	}
	g.Hold(t, s)
	const n = 1000
	for i := range n {
		b, err := hostmem.Wrap(cu, mems[i%len(mems)])
		testenv.Must(t, err)
		testenv.Must(t, b.Use(s))
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	time.Sleep(20 * time.Millisecond) // the reaper polls meanwhile
	if p := hostmem.ReadStats().Pending; p != n {
		t.Fatalf("%d releases pending behind the gate, want %d", p, n)
	}
	// Count the queries from the moment the work can end: a round then
	// queries one target of the stream (and a binary search of at most
	// log2(n) more) and finishes every use up to it, whatever the speed
	// of the machine; one query per release would be n.
	before := testenv.SimStat(t, "event_queries")
	g.Open()
	// Wait without Drain, which makes the reaper poll faster.
	testenv.Eventually(t, "all released", func() bool { return hostmem.ReadStats().Pending == 0 })
	queries := testenv.SimStat(t, "event_queries") - before
	memtest.Drain(t)
	t.Logf("%d releases took %d event queries once their work could end", n, queries)
	if queries >= n/10 {
		t.Errorf("%d releases on one stream took %d event queries once their work could end, want fewer than %d", n, queries, n/10)
	}
}

// A Use that cannot record its event (here cuStreamGetId fails) still
// told hostmem that work uses the buffer: the release waits for the whole
// context instead of forgetting the work.
func TestFailedUseMakesTheReleaseWaitForTheContext(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s := testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(testenv.NewStream(t))) // a use that is tracked, on an idle stream
	g.Hold(t, s)                                 // the work of the use that is not
	testenv.SimFailNext(t, "cuStreamGetId", 1, libcuda.CUDA_ERROR_UNKNOWN)
	if err := b.Use(s); err == nil {
		t.Fatal("Use with cuStreamGetId failing returned nil")
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	settlesAtPending(t, 1, "while the stream is held")
	g.Open()
	memtest.Drain(t)
}

// The context of a stream is asked of the driver once: streams are known
// by their unique id, which no other stream gets, so a use on a stream
// used before makes no cuStreamGetCtx.
func TestUseAsksAStreamsContextOnce(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	s, fresh := testenv.NewStream(t), testenv.NewStream(t)
	memtest.Drain(t)
	a, err := hostmem.Wrap(cu, make([]byte, 4096))
	testenv.Must(t, err)
	testenv.Must(t, a.Use(s))
	testenv.MustBounded(t, "a.Free", a.Free)
	testenv.SimFailNext(t, "cuStreamGetCtx", 1, libcuda.CUDA_ERROR_UNKNOWN)
	b, err := hostmem.Wrap(cu, make([]byte, 4096))
	testenv.Must(t, err)
	if err := b.Use(s); err != nil {
		t.Fatalf("a use on a stream used before = %v, want no cuStreamGetCtx and so no error", err)
	}
	// The armed failure is still there for a stream not seen before.
	if err := b.Use(fresh); !errors.Is(err, libcuda.CUDA_ERROR_UNKNOWN) {
		t.Fatalf("a use on a new stream = %v, want cuStreamGetCtx's injected failure", err)
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	memtest.Drain(t)
}

// A freed buffer's events stay its own until its release has ended: were
// they back in the pool at Free, the next Use would record one of them on
// another stream, and the first release would take that stream's
// completion for its own. Here the first buffer's work is held; the second
// buffer's is done at once, on another stream; the reaper's queries after
// that must still find the first release waiting.
func TestAFreedBuffersEventsServeNoOtherUseBeforeItsReleaseEnds(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	held, idle := testenv.NewStream(t), testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	memA, memB := make([]byte, 8192), make([]byte, 8192)

	g.Hold(t, held)
	a, err := hostmem.Wrap(cu, memA)
	testenv.Must(t, err)
	testenv.Must(t, a.Use(held))
	testenv.MustBounded(t, "a.Free", a.Free)

	b, err := hostmem.Wrap(cu, memB)
	testenv.Must(t, err)
	testenv.Must(t, b.Use(idle))
	testenv.MustBounded(t, "b.Free", b.Free)
	testenv.Eventually(t, "the second buffer's release", func() bool { return hostmem.ReadStats().Pending <= 1 })
	// Rounds of the reaper that query the first buffer's event after the
	// second use was recorded.
	q := testenv.SimStat(t, "event_queries")
	testenv.Eventually(t, "three more event queries", func() bool { return testenv.SimStat(t, "event_queries") >= q+3 })
	if p := hostmem.ReadStats().Pending; p != 1 {
		t.Fatalf("%d releases pending while the first buffer's work is held, want 1: its event served the second buffer's use", p)
	}
	g.Open()
	testenv.Eventually(t, "the first buffer's release", func() bool { return hostmem.ReadStats().Pending == 0 })
	memtest.Drain(t)
}
