package cuda

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// PURECUDA_LAUNCH_HISTORY sets the history's length, rounded up to a power
// of two, 0 for none; anything else (not a number, negative, beyond 2^16)
// keeps the default 64.
func TestLaunchHistorySize(t *testing.T) {
	for v, want := range map[string]int{
		"": 64, "x": 64, "-1": 64, "0": 0, "1": 1, "2": 2, "3": 4, "5": 8, "64": 64, "65": 128,
		"65536": 65536, "65537": 64, "1000000": 64,
	} {
		t.Setenv("PURECUDA_LAUNCH_HISTORY", v)
		if got := historySize(); got != want {
			t.Errorf("PURECUDA_LAUNCH_HISTORY=%q: a history of %d, want %d", v, got, want)
		}
	}
}

// A device without a history (PURECUDA_LAUNCH_HISTORY=0) numbers its
// launches all the same and has no candidates.
func TestNoLaunchHistory(t *testing.T) {
	dv := &devState{}
	f, st := &Func{name: "k"}, &streamState{}
	var d [6]uint32
	for i := range 3 {
		if n := dv.record(f, st, &d, 0); n != uint64(i+1) {
			t.Fatalf("launch %d numbered %d", i+1, n)
		}
	}
	if c := dv.candidates(nil); len(c) != 0 {
		t.Errorf("candidates %v without a history", c)
	}
}

// The history keeps only the newest len(ring) launches: an entry
// overwritten by a newer launch is not reported for the older one, and the
// launch a history's length back is gone.
func TestLaunchHistoryKeepsTheNewest(t *testing.T) {
	dv := &devState{ring: make([]launchSlot, 4)}
	f, a := &Func{name: "k"}, &streamState{raw: 1}
	d := [6]uint32{2, 1, 1, 32, 1, 1}
	for range 9 {
		dv.record(f, a, &d, 0)
	}
	var got []uint64
	for _, l := range dv.candidates(nil) {
		got = append(got, l.Number)
		if l.Grid != (Dim3{2, 1, 1}) || l.Block != (Dim3{32, 1, 1}) || l.Kernel != "k" || l.Stream != 1 {
			t.Errorf("launch %v: want k, grid (2,1,1), block (32,1,1) on stream 1", l)
		}
	}
	if !slices.Equal(got, []uint64{9, 8, 7, 6}) {
		t.Errorf("candidates %v, want 9 8 7 6", got)
	}
	// Waits seen done bound them from below, and a wait older than one
	// seen changes nothing.
	a.noteWaited(7)
	a.noteWaited(6)
	if w := a.waited.Load(); w != 7 {
		t.Errorf("waited %d after 7 then 6, want 7", w)
	}
	dv.noteSynced(8)
	dv.noteSynced(2)
	if s := dv.synced.Load(); s != 8 {
		t.Errorf("synced %d after 8 then 2, want 8", s)
	}
	if c := dv.candidates(nil); len(c) != 1 || c[0].Number != 9 {
		t.Errorf("candidates %v, want launch 9 alone", c)
	}
}

// lose keeps the first failure: later ones return it. With a stream that
// has candidates, they are that stream's (OneStream); without, every
// stream's; exact, the one launch.
func TestLoseKeepsTheFirstFailure(t *testing.T) {
	logs := captureLogs(t)
	dv := &devState{ring: make([]launchSlot, 8), ordinal: 3}
	f := &Func{name: "k"}
	a, b, quiet := &streamState{raw: 1}, &streamState{raw: 2}, &streamState{raw: 3}
	var d [6]uint32
	dv.record(f, a, &d, 0)
	dv.record(f, b, &d, 0)
	dv.record(f, a, &d, 0)
	first := libcuda.CUDA_ERROR_ILLEGAL_ADDRESS
	l := dv.lose(a, first, nil)
	if !l.OneStream || l.Exact || len(l.Launches) != 2 || l.Launches[0].Number != 3 || l.Launches[1].Number != 1 || l.Device != 3 {
		t.Errorf("lost on stream a: %+v, want a's launches 3 and 1, one stream, device 3", l)
	}
	if again := dv.lose(b, libcuda.CUDA_ERROR_LAUNCH_FAILED, nil); again != l {
		t.Errorf("a second loss gave %v, want the first", again)
	}
	if len(*logs) != 1 || !strings.Contains((*logs)[0], "device 3 lost") {
		t.Errorf("logged %q, want one line for the loss", *logs)
	}
	if l.Result() != first || !errors.Is(l, ErrContextLost) || !errors.Is(l, first) {
		t.Errorf("Result %v: want %v, matching ErrContextLost and it", l.Result(), first)
	}

	dv2 := &devState{ring: make([]launchSlot, 8)}
	dv2.record(f, a, &d, 0)
	dv2.record(f, b, &d, 0)
	l2 := dv2.lose(quiet, first, nil)
	if l2.OneStream || len(l2.Launches) != 2 {
		t.Errorf("lost on a stream with no launches: %+v, want every stream's two", l2)
	}
	if !strings.Contains(l2.Error(), "launches since their streams' last completed waits") {
		t.Errorf("error %q: want it to say the launches are every stream's", l2.Error())
	}

	dv3 := &devState{ring: make([]launchSlot, 8)}
	dv3.record(f, a, &d, 0)
	exact := &LaunchInfo{Number: 1, Kernel: "k"}
	l3 := dv3.lose(a, first, exact)
	if !l3.Exact || l3.OneStream || len(l3.Launches) != 1 || l3.Launches[0].Kernel != "k" {
		t.Errorf("lost exactly: %+v", l3)
	}
	if !strings.Contains(l3.Error(), "the launch that faulted (debug mode)") {
		t.Errorf("error %q: want it to name the launch that faulted", l3.Error())
	}

	dv4 := &devState{ring: make([]launchSlot, 8)}
	l4 := dv4.lose(nil, first, nil)
	if len(l4.Launches) != 0 || !strings.Contains(l4.Error(), "no launch since the last completed waits") {
		t.Errorf("lost with no launch: %v", l4)
	}
	if !strings.Contains(l.Error(), "launches on that stream since its last completed wait") || !strings.HasPrefix(l.Error(), "cuda: the context of device 3 is lost") {
		t.Errorf("error %q: want the device and the stream's launches", l.Error())
	}
}

// A bare Result as the first failure is named by the first driver call
// that reports it (name), unless a call has returned the loss at once
// before (lostErr), which named no driver call.
func TestLostErrorNamesTheCallOnce(t *testing.T) {
	captureLogs(t)
	dv := &devState{}
	l := dv.lose(nil, libcuda.CUDA_ERROR_ILLEGAL_ADDRESS, nil)
	l.name("cuStreamSynchronize")
	l.name("cuCtxSynchronize")
	if s := l.Error(); !strings.Contains(s, "cuStreamSynchronize: ") || strings.Contains(s, "cuCtxSynchronize") {
		t.Errorf("error %q: want the first call named, once", s)
	}
	dv2 := &devState{}
	l2 := dv2.lose(nil, libcuda.CUDA_ERROR_ILLEGAL_ADDRESS, nil)
	st := &ctxState{dv: dv2}
	if err := st.lostErr(); err != l2 {
		t.Fatalf("lostErr = %v, want the loss", err)
	}
	l2.name("cuStreamSynchronize")
	if strings.Contains(l2.Error(), "cuStreamSynchronize") {
		t.Errorf("error %q names a call after the loss was returned at once", l2.Error())
	}
	dv3 := &devState{}
	wrapped := driverErr("cuMemcpy", libcuda.CUDA_ERROR_ILLEGAL_ADDRESS)
	l3 := dv3.lose(nil, wrapped, nil)
	l3.name("cuStreamSynchronize")
	if strings.Contains(l3.Error(), "cuStreamSynchronize") || !strings.Contains(l3.Error(), "cuMemcpy") {
		t.Errorf("error %q: a failure that names its call keeps it", l3.Error())
	}
	if (&ctxState{dv: &devState{}}).lostErr() != nil {
		t.Error("lostErr of a device not lost")
	}
	// check turns a sticky failure into the loss, leaves others alone.
	st4 := &ctxState{dv: &devState{}}
	other := driverErr("cuMemAlloc", libcuda.CUDA_ERROR_OUT_OF_MEMORY)
	if err := st4.check(other); err != other {
		t.Errorf("check(%v) = %v, want it unchanged", other, err)
	}
	if err := st4.check(nil); err != nil {
		t.Errorf("check(nil) = %v", err)
	}
	var lost *LostError
	if err := st4.check(wrapped); !errors.As(err, &lost) || st4.dv.lost.Load() != lost {
		t.Errorf("check of a sticky failure = %v, want the device's LostError", err)
	}
	if err := st4.check(lost); err != lost {
		t.Errorf("check of the LostError = %v, want it as it is", err)
	}
}

// A graph's launch prints as one; a kernel's with its shape and, in debug
// mode, its arguments.
func TestLaunchInfoString(t *testing.T) {
	g := LaunchInfo{Number: 4, Kernel: graphFunc.name, Stream: 0x10}
	if s := g.String(); s != "launch #4 of a graph on stream 0x10" {
		t.Errorf("a graph's launch: %q", s)
	}
	k := LaunchInfo{Number: 5, Kernel: "k", Grid: Dim3{2, 0, 0}, Block: Dim3{32, 2, 1}, Stream: 0x20, Args: []string{"a", "b"}}
	if s := k.String(); s != "launch #5 of k, grid (2,1,1), block (32,2,1), on stream 0x20 with (a, b)" {
		t.Errorf("a kernel's launch: %q", s)
	}
	if file, line, fn := k.Caller(); file != "" || line != 0 || fn != "" {
		t.Errorf("Caller without a PC: %s:%d %s", file, line, fn)
	}
}

// captureLogs collects what package cuda logs at error level during the
// test.
func captureLogs(t *testing.T) *[]string {
	h := &msgHandler{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &h.msgs
}

type msgHandler struct{ msgs []string }

func (h *msgHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *msgHandler) Handle(_ context.Context, r slog.Record) error {
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *msgHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *msgHandler) WithGroup(string) slog.Handler      { return h }

// An entry that holds another launch's fields and sum under this launch's
// number (a writer a history's length later, caught midway) is left out:
// the sum covers the number too.
func TestLaunchHistoryLeavesOutAnotherLaunchsEntry(t *testing.T) {
	dv := &devState{ring: make([]launchSlot, 4)}
	f, a := &Func{name: "f"}, &streamState{raw: 10}
	d := [6]uint32{1, 1, 1, 1, 1, 1}
	dv.record(f, a, &d, 1)
	dv.record(f, a, &d, 2)
	s := &dv.ring[2]
	g := [3]uint32{1, 1, 1}
	s.callPC = 3
	s.sum = slotSum(6, f, a, g, g, 3) // launch 6's, written into launch 2's slot
	if got := dv.candidates(nil); len(got) != 1 || got[0].Number != 1 {
		t.Errorf("candidates %v, want launch 1 alone", got)
	}
}

// A name for the linker's logs may hold no NUL byte anywhere, the first
// too.
func TestLinkerRefusesNamesWithNUL(t *testing.T) {
	var l Linker
	for _, name := range []string{"\x00", "\x00a", "a\x00"} {
		if err := l.AddPTX(name, []byte(".version 8.0\n")); err == nil {
			t.Errorf("AddPTX(%q): no error", name)
		}
	}
	if err := l.AddPTX("ok", []byte(".version 8.0\n")); err != nil || len(l.inputs) != 1 {
		t.Fatalf("AddPTX(ok): %v, %d inputs", err, len(l.inputs))
	}
	if in := l.inputs[0].data; in[len(in)-1] != 0 || len(in) != len(".version 8.0\n")+1 {
		t.Errorf("PTX kept as %q, want it with one NUL added", in)
	}
	withNUL := []byte(".version 8.0\n\x00")
	testenvMust(t, l.AddPTX("nul", withNUL))
	if in := l.inputs[1].data; len(in) != len(withNUL) {
		t.Errorf("PTX with its NUL kept as %q, want it as given", in)
	}
	cubin := []byte{1, 2, 3}
	testenvMust(t, l.AddCubin("c", cubin))
	testenvMust(t, l.AddFatbin("f", cubin))
	for i, kind := range []string{"cubin", "fatbin"} {
		if in := l.inputs[2+i].data; len(in) != len(cubin) {
			t.Errorf("a %s kept as %v, want it as given (no NUL added)", kind, in)
		}
	}
	var nilLinker *Linker
	if err := nilLinker.AddPTX("x", []byte("x")); !errors.Is(err, ErrNil) {
		t.Errorf("AddPTX on a nil Linker: %v, want ErrNil", err)
	}
	if _, err := nilLinker.Link(nil); !errors.Is(err, ErrNil) {
		t.Errorf("Link on a nil Linker: %v, want ErrNil", err)
	}
}

func testenvMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
