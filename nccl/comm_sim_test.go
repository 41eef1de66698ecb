//go:build linux && !gpu

package nccl_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// Bad arguments are refused before anything reaches NCCL, each error
// naming the argument.
func TestArgumentsAreCheckedBeforeNCCL(t *testing.T) {
	ranks := initAll(t, 4)
	r0, r1 := ranks[0], ranks[1]
	four, eight, sixteen := upload(t, r0, make([]float32, 4)), upload(t, r0, make([]float32, 8)), upload(t, r0, make([]float32, 16))
	other := upload(t, r1, make([]float32, 4))
	before := testenv.NCCLStat(t, "enqueued")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"AllReduce lengths", nccl.AllReduce(r0.c, r0.s, four, eight, nccl.Sum), "recv has 8 elements"},
		{"AllGather recv", nccl.AllGather(r0.c, r0.s, four, eight), "recv has 8 elements, want Size() × len(send) = 4 × 4"},
		{"ReduceScatter send", nccl.ReduceScatter(r0.c, r0.s, eight, four, nccl.Sum), "send has 8 elements, want Size() × len(recv) = 4 × 4"},
		{"AlltoAll send", nccl.AlltoAll(r0.c, r0.s, upload(t, r0, make([]float32, 6)), upload(t, r0, make([]float32, 6))), "send has 6 elements, want a multiple of Size() = 4"},
		{"AllGatherInPlace buf", nccl.AllGatherInPlace(r0.c, r0.s, upload(t, r0, make([]float32, 6))), "buf has 6 elements"},
		{"Broadcast root", nccl.BroadcastInPlace(r0.c, r0.s, four, 4), "root 4 out of range [0, 4)"},
		{"Reduce root", nccl.Reduce(r0.c, r0.s, four, four, nccl.Sum, -1), "root -1 out of range"},
		{"Gather root", nccl.Gather(r0.c, r0.s, four, sixteen, 9), "root 9 out of range"},
		{"Send peer", nccl.Send(r0.c, r0.s, four, 4), "peer 4 out of range"},
		{"Recv peer", nccl.Recv(r0.c, r0.s, four, -1), "peer -1 out of range"},
		{"a Slice of another device", nccl.AllReduce(r0.c, r0.s, four, other, nccl.Sum), "recv: a Slice of device 1, the communicator's is device 0"},
		{"a stream of another context", nccl.AllReduceInPlace(r0.c, r1.s, four, nccl.Sum), "stream: of another context"},
		{"a nil stream", nccl.AllReduceInPlace(r0.c, nil, four, nccl.Sum), "stream: nil"},
		{"a nil Comm", nccl.AllReduceInPlace(nil, r0.s, four, nccl.Sum), "nil Comm"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, c.err, c.want)
		}
	}
	if n := testenv.NCCLStat(t, "enqueued"); n != before {
		t.Errorf("%d calls reached NCCL", n-before)
	}
	if err := nccl.AllReduceInPlace(r0.c, r0.s, cuda.Slice[float32]{}, nccl.Sum); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("a zero Slice: %v, want cuda.ErrNil", err)
	}
}

// NCCL's failures are Result values that errors.Is matches, with NCCL's
// text for the failure (ncclGetLastError) in the message.
func TestNCCLErrorsAreResultsWithTheLastErrorText(t *testing.T) {
	ranks := initAll(t, 4)
	buf := upload(t, ranks[0], make([]float32, 4))
	err := nccl.AllReduceInPlace(ranks[0].c, ranks[0].s, buf, nccl.RedOp(99))
	if !errors.Is(err, nccl.InvalidArgument) || !strings.Contains(err.Error(), "invalid reduction op 99") ||
		!strings.Contains(err.Error(), "ncclAllReduce") {
		t.Errorf("got %v, want ncclInvalidArgument naming ncclAllReduce with NCCL's text", err)
	}
	if got := nccl.RemoteError.Error(); !strings.HasPrefix(got, "ncclRemoteError (6)") {
		t.Errorf("RemoteError.Error() = %q", got)
	}
}

// A UniqueID goes through its binary and text forms and back; wrong
// lengths and bad digits are errors.
func TestUniqueIDMarshalsBothWays(t *testing.T) {
	id, err := nccl.NewUniqueID()
	testenv.Must(t, err)
	if id == (nccl.UniqueID{}) {
		t.Fatal("NewUniqueID gave the zero id")
	}
	b, _ := id.MarshalBinary()
	var back nccl.UniqueID
	testenv.Must(t, back.UnmarshalBinary(b))
	txt, _ := id.MarshalText()
	var fromText nccl.UniqueID
	testenv.Must(t, fromText.UnmarshalText(txt))
	if back != id || fromText != id || len(txt) != 256 {
		t.Errorf("round trips differ (%d digits)", len(txt))
	}
	if err := back.UnmarshalBinary(b[:100]); err == nil {
		t.Error("100 bytes accepted")
	}
	if err := back.UnmarshalText(append([]byte("zz"), txt[2:]...)); err == nil {
		t.Error("non-hexadecimal digits accepted")
	}
	if other, _ := nccl.NewUniqueID(); other == id {
		t.Error("two NewUniqueID calls gave the same id")
	}
}

// Ranks in goroutines of one process join one communicator with
// InitRank, each on its device; the communicator knows its rank, size and
// device, and its collectives work.
func TestInitRankFromGoroutines(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	id, err := nccl.NewUniqueID()
	testenv.Must(t, err)
	const n = 3
	comms := make([]*nccl.Comm, n)
	errs := make([]error, n)
	var wg gosync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[i], errs[i] = nccl.InitRank(testenv.Context(t), devs[i], n, i, id, nccl.CommName("test"))
		}()
	}
	waitGroup(t, &wg, "the inits")
	for i, c := range comms {
		if errs[i] != nil {
			t.Fatalf("rank %d: %v", i, errs[i])
		}
		if c.Rank() != i || c.Size() != n || c.Device().Ordinal() != i {
			t.Errorf("rank %d: Rank %d Size %d Device %d", i, c.Rank(), c.Size(), c.Device().Ordinal())
		}
	}
	for i, c := range comms {
		testenv.Must(t, c.Close())
		if err := c.Close(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("rank %d: second Close: %v", i, err)
		}
	}
	if _, err := nccl.InitRank(testenv.Context(t), devs[0], 2, 2, id); err == nil || !strings.Contains(err.Error(), "rank 2 out of range") {
		t.Errorf("rank 2 of 2: %v", err)
	}
}

// Group runs its calls on one locked thread: ncclGroupEnd never comes
// from a thread without the group, and the group is ended when f fails or
// panics.
func TestGroupStaysOnOneThreadAndAlwaysEnds(t *testing.T) {
	ranks := initAll(t, 4)
	bufs := make([]cuda.Slice[float32], len(ranks))
	for i, r := range ranks {
		bufs[i] = upload(t, r, []float32{1})
	}
	misuse, open := testenv.NCCLStat(t, "group_misuse"), testenv.NCCLStat(t, "groups_open")
	for range 50 {
		testenv.Must(t, nccl.Group(func() error {
			for i, r := range ranks {
				runtime.Gosched()
				runtime.GC()
				if err := nccl.AllReduceInPlace(r.c, r.s, bufs[i], nccl.Max); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	boom := errors.New("boom")
	if err := nccl.Group(func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Group with a failing f: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_ = nccl.Group(func() error { panic("in the group") })
	}()
	if n := testenv.NCCLStat(t, "group_misuse"); n != misuse {
		t.Errorf("%d ncclGroupEnd calls came from a thread without a group", n-misuse)
	}
	if n := testenv.NCCLStat(t, "groups_open"); n != open {
		t.Errorf("%d groups left open", n-open)
	}
	syncAll(t, ranks)
	if got := download(t, ranks[3], bufs[3]); got[0] != 1 {
		t.Errorf("after 50 Max all-reduces: %v", got)
	}
}

// A collective records its Slices' use on the stream: the Free of its
// recv waits until the stream has run it.
func TestCollectivesRecordTheirSlices(t *testing.T) {
	testenv.OnPrimary(t, 0)
	ranks := initAll(t, 1)
	r := ranks[0]
	gate := testenv.NewGate(t)
	send := upload(t, r, []float32{1, 2})
	recv, err := cuda.Alloc[float32](r.s, 2)
	testenv.Must(t, err)
	testenv.Must(t, r.s.Sync(testenv.Context(t)))
	base := testenv.SimStat(t, "live_allocations")
	gate.Hold(t, r.s.Raw())
	testenv.Must(t, nccl.AllReduce(r.c, r.s, send, recv, nccl.Sum))
	testenv.Must(t, recv.Free())
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if n := testenv.SimStat(t, "live_allocations"); n != base {
			t.Fatalf("recv freed while the all-reduce's stream is held (%d live, want %d)", n, base)
		}
	}
	gate.Open()
	testenv.Eventually(t, "the free", func() bool { return testenv.SimStat(t, "live_allocations") == base-1 })
}

// An all-reduce captured into a graph (one per rank) runs each time the
// graphs are launched: an in-place sum over four ranks of 1 is 4^k after k
// launches.
func TestCapturedAllReduceLaunched100Times(t *testing.T) {
	ranks := initAll(t, 4)
	const launches = 100
	bufs := make([]cuda.Slice[float64], len(ranks))
	execs := make([]*cuda.Exec, len(ranks))
	for i, r := range ranks {
		bufs[i] = upload(t, r, []float64{1, 0.25})
		testenv.Must(t, r.s.Sync(testenv.Context(t)))
		g, err := r.s.Capture(func(s *cuda.Stream) error { return nccl.AllReduceInPlace(r.c, s, bufs[i], nccl.Sum) })
		testenv.Must(t, err)
		e, err := g.Instantiate()
		testenv.Must(t, err)
		testenv.Must(t, g.Destroy())
		execs[i] = e
		t.Cleanup(func() { testenv.Must(t, e.Destroy()) })
	}
	if got := download(t, ranks[0], bufs[0]); got[0] != 1 {
		t.Fatalf("the capture ran the all-reduce: %v", got)
	}
	for range launches {
		for i, r := range ranks {
			testenv.Must(t, r.s.LaunchGraph(execs[i]))
		}
	}
	syncAll(t, ranks)
	want := []float64{1, 0.25}
	for range launches {
		want[0] *= 4
		want[1] *= 4
	}
	for i, r := range ranks {
		if got := download(t, r, bufs[i]); got[0] != want[0] || got[1] != want[1] {
			t.Errorf("rank %d after %d launches: %v, want %v", i, launches, got, want)
		}
	}
}

// Split makes communicators of the ranks of one color, ordered by key;
// a rank with no color gets none. Shrink leaves ranks out.
func TestSplitAndShrink(t *testing.T) {
	ranks := initAll(t, 4)
	subs := make([]*nccl.Comm, 4)
	errs := make([]error, 4)
	var wg gosync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			color := i % 2
			if i == 3 {
				color = -1
			}
			subs[i], errs[i] = r.c.Split(color, -i) // reversed order
		}()
	}
	waitGroup(t, &wg, "the splits")
	for i := range subs {
		testenv.Must(t, errs[i])
	}
	if subs[3] != nil {
		t.Errorf("rank 3 had no color and got a communicator")
	}
	// color 0: ranks 0 and 2, keys 0 and -2: rank 2 first
	if subs[0].Size() != 2 || subs[0].Rank() != 1 || subs[2].Rank() != 0 || subs[1].Size() != 1 {
		t.Errorf("split: sizes %d %d, ranks %d %d %d", subs[0].Size(), subs[1].Size(), subs[0].Rank(), subs[1].Rank(), subs[2].Rank())
	}
	bufs := []cuda.Slice[int32]{upload(t, ranks[0], []int32{5}), upload(t, ranks[2], []int32{7})}
	testenv.Must(t, nccl.Group(func() error {
		if err := nccl.AllReduceInPlace(subs[0], ranks[0].s, bufs[0], nccl.Sum); err != nil {
			return err
		}
		return nccl.AllReduceInPlace(subs[2], ranks[2].s, bufs[1], nccl.Sum)
	}))
	if got := download(t, ranks[0], bufs[0]); got[0] != 12 {
		t.Errorf("sum over the split communicator: %v, want 12", got)
	}
	for _, c := range subs[:3] {
		testenv.Must(t, c.Close())
	}
	shrunk := make([]*nccl.Comm, 3)
	for i, r := range ranks[:3] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shrunk[i], errs[i] = r.c.Shrink([]int{3})
		}()
	}
	waitGroup(t, &wg, "the shrinks")
	for i, c := range shrunk {
		testenv.Must(t, errs[i])
		if c.Size() != 3 || c.Rank() != i {
			t.Errorf("shrunk rank %d: Rank %d Size %d", i, c.Rank(), c.Size())
		}
		testenv.Must(t, c.Close())
	}
	if _, err := ranks[0].c.Shrink([]int{0}); err == nil {
		t.Error("Shrink excluding this rank was accepted")
	}
}

// A rank aborted while the others wait in an all-reduce makes theirs
// fail: their Sync returns ncclRemoteError before its deadline, and their
// communicators are aborted too.
func TestAPeerAbortedMidCollectiveFailsTheOthers(t *testing.T) {
	ranks := initAll(t, 4)
	bufs := make([]cuda.Slice[float32], 4)
	for i, r := range ranks {
		bufs[i] = upload(t, r, []float32{1})
	}
	for i, r := range ranks[:3] {
		testenv.Must(t, nccl.AllReduceInPlace(r.c, r.s, bufs[i], nccl.Sum))
	}
	ranks[3].c.Abort()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	for i, r := range ranks[:3] {
		if err := r.c.Sync(ctx, r.s); !errors.Is(err, nccl.RemoteError) {
			t.Errorf("rank %d: Sync: %v, want ncclRemoteError", i, err)
		}
		if err := nccl.AllReduceInPlace(r.c, r.s, bufs[i], nccl.Sum); !errors.Is(err, nccl.ErrAborted) {
			t.Errorf("rank %d: a call after the failure: %v, want ErrAborted", i, err)
		}
	}
	if err := ranks[3].c.Close(); !errors.Is(err, nccl.ErrAborted) {
		t.Errorf("Close after Abort: %v", err)
	}
}

// Sync's context ending while a peer never comes aborts the communicator,
// which fails the peers that did come.
func TestSyncContextEndAborts(t *testing.T) {
	ranks := initAll(t, 3)
	bufs := make([]cuda.Slice[float32], 3)
	for i, r := range ranks {
		bufs[i] = upload(t, r, []float32{1})
	}
	for i, r := range ranks[:2] {
		testenv.Must(t, nccl.AllReduceInPlace(r.c, r.s, bufs[i], nccl.Sum))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ranks[0].c.Sync(ctx, ranks[0].s); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 0: %v, want the deadline", err)
	}
	if err := ranks[1].c.Sync(testenv.Context(t), ranks[1].s); !errors.Is(err, nccl.RemoteError) {
		t.Errorf("rank 1: %v, want ncclRemoteError", err)
	}
}

// A non-blocking init is waited for cooperatively: it completes when
// every rank comes, and when one never does, its context's end aborts it.
func TestNonBlockingInit(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	id, err := nccl.NewUniqueID()
	testenv.Must(t, err)
	comms := make([]*nccl.Comm, 2)
	errs := make([]error, 2)
	var wg gosync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[i], errs[i] = nccl.InitRank(testenv.Context(t), devs[i], 2, i, id, nccl.Blocking(false))
		}()
	}
	waitGroup(t, &wg, "the inits")
	for i, c := range comms {
		testenv.Must(t, errs[i])
		testenv.Must(t, c.Close())
	}
	aborts := testenv.NCCLStat(t, "aborts")
	lone, err := nccl.NewUniqueID()
	testenv.Must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if c, err := nccl.InitRank(ctx, devs[0], 2, 0, lone, nccl.Blocking(false)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("init with a rank missing: %v, %v; want the deadline", c, err)
	}
	if n := testenv.NCCLStat(t, "aborts"); n != aborts+1 {
		t.Errorf("%d aborts, want 1", n-aborts)
	}
}

// A Comm dropped without Close is aborted by the garbage collector.
func TestDroppedCommIsAborted(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	aborts := testenv.NCCLStat(t, "aborts")
	func() {
		id, err := nccl.NewUniqueID()
		testenv.Must(t, err)
		_, err = nccl.InitRank(testenv.Context(t), devs[0], 1, 0, id)
		testenv.Must(t, err)
	}()
	testenv.Eventually(t, "the abort", func() bool {
		runtime.GC()
		return testenv.NCCLStat(t, "aborts") > aborts
	})
}

// Every collective of every element type, with every op where it reduces,
// over four ranks of this process (InitAll on four simulated devices),
// checked element by element.
func TestCollectivesOfEveryTypeAndOp(t *testing.T) {
	ranks := initAll(t, 4)
	t.Run("int8", func(t *testing.T) { collectives[int8](t, ranks) })
	t.Run("uint8", func(t *testing.T) { collectives[uint8](t, ranks) })
	t.Run("int32", func(t *testing.T) { collectives[int32](t, ranks) })
	t.Run("uint32", func(t *testing.T) { collectives[uint32](t, ranks) })
	t.Run("int64", func(t *testing.T) { collectives[int64](t, ranks) })
	t.Run("uint64", func(t *testing.T) { collectives[uint64](t, ranks) })
	t.Run("float32", func(t *testing.T) { collectives[float32](t, ranks) })
	t.Run("float64", func(t *testing.T) { collectives[float64](t, ranks) })
	t.Run("Half", func(t *testing.T) { collectives[cuda.Half](t, ranks) })
	t.Run("BFloat16", func(t *testing.T) { collectives[cuda.BFloat16](t, ranks) })
	t.Run("Float8E4M3", func(t *testing.T) { collectives[nccl.Float8E4M3](t, ranks) })
	t.Run("Float8E5M2", func(t *testing.T) { collectives[nccl.Float8E5M2](t, ranks) })
}

// The one-rank runs of the GPU tests, on the stand-in: every collective of
// a communicator of one rank.
func TestOneRankCollectives(t *testing.T) {
	ranks := initAll(t, 1)
	t.Run("float32", func(t *testing.T) { collectives[float32](t, ranks) })
	t.Run("int64", func(t *testing.T) { collectives[int64](t, ranks) })
	t.Run("Float8E4M3", func(t *testing.T) { collectives[nccl.Float8E4M3](t, ranks) })
}
