package handle_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/internal/handle"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is a context and a stream on it, closed when the test ends.
func fixture(t *testing.T) (*cuda.Context, *cuda.Stream) {
	t.Helper()
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.Must(t, ctx.Close()) })
	s, err := ctx.NewStream(cuda.NonBlocking())
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Error(err)
		}
	})
	return ctx, s
}

// current is the calling thread's current context.
func current() libcuda.Context {
	var c libcuda.Context
	if err := libcuda.CtxGetCurrent(&c); err != nil {
		return 0
	}
	return c
}

// counter counts the destroys of a Life and the context current for the
// last one.
type counter struct {
	n   atomic.Int32
	ctx atomic.Uintptr
	err error
}

func (c *counter) destroy() error {
	c.n.Add(1)
	c.ctx.Store(uintptr(current()))
	return c.err
}

// settle waits for the destroys handed to graph.Postpone.
func settle(t *testing.T) {
	t.Helper()
	testenv.Must(t, graph.Drain(testenv.Context(t)))
}

// bounded fails t if call does not return within testenv.Timeout.
func bounded(t *testing.T, what string, call func() error) error {
	t.Helper()
	return testenv.Recv(t, testenv.WaitAsync(call), what)
}

// Open runs create on the stream's raw handle with its context current,
// and the Life is on that stream.
func TestOpenCreatesOnTheStream(t *testing.T) {
	ctx, s := fixture(t)
	log := recordLogs(t)
	var got libcuda.Stream
	var cur libcuda.Context
	var c counter
	l, err := handle.Open(s, "pkg", "pkgCreate", func(raw libcuda.Stream) error {
		got, cur = raw, current()
		return nil
	}, c.destroy)
	testenv.Must(t, err)
	if got != s.Raw() || cur != ctx.Raw() {
		t.Errorf("create ran on stream %v in context %v, want %v in %v", got, cur, s.Raw(), ctx.Raw())
	}
	testenv.Must(t, l.Acquire("Call"))
	if l.Stream() != s {
		t.Error("Stream is not the one opened on")
	}
	l.Release()
	testenv.Must(t, l.Close(nil))
	settle(t)
	if n := c.n.Load(); n != 1 {
		t.Errorf("%d destroys after Close, want 1", n)
	}
	if got := libcuda.Context(c.ctx.Load()); got != ctx.Raw() {
		t.Errorf("the destroy ran in context %v, want the stream's %v", got, ctx.Raw())
	}
	if msgs := log.messages(); len(msgs) != 0 {
		t.Errorf("a destroy that worked logged %q", msgs)
	}
}

// An Open whose create fails returns create's error and destroys
// nothing; an Open on a closed stream fails naming the package.
func TestOpenThatFailsDestroysNothing(t *testing.T) {
	_, s := fixture(t)
	var c counter
	boom := errors.New("boom")
	l, err := handle.Open(s, "pkg", "pkgCreate", func(libcuda.Stream) error { return boom }, c.destroy)
	if l != nil || !errors.Is(err, boom) {
		t.Errorf("Open = %v, %v; want create's error", l, err)
	}
	settle(t)
	if n := c.n.Load(); n != 0 {
		t.Errorf("%d destroys of what was never made", n)
	}
	testenv.Must(t, s.Close())
	l, err = handle.Open(s, "pkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
	if l != nil || !errors.Is(err, cuda.ErrClosed) || !strings.HasPrefix(err.Error(), "pkg: New: ") {
		t.Errorf("Open on a closed stream = %v, %v", l, err)
	}
}

// After Close, Acquire and Lock fail with ErrClosed naming the package
// and the call, as often as they are called, and never keep the lock;
// a second Close is ErrClosed and destroys nothing more.
func TestAfterCloseEveryHoldIsClosedAndKeepsNoLock(t *testing.T) {
	_, s := fixture(t)
	var c counter
	l, err := handle.Open(s, "pkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
	testenv.Must(t, err)
	cleared := 0
	testenv.Must(t, l.Close(func() { cleared++ }))
	if cleared != 1 {
		t.Errorf("cleared ran %d times, want 1", cleared)
	}
	for i := range 3 {
		if err := bounded(t, "Acquire after Close", func() error { return l.Acquire("Call") }); !errors.Is(err, cuda.ErrClosed) || err.Error() != "pkg: Call: "+cuda.ErrClosed.Error() {
			t.Errorf("Acquire %d after Close: %v", i, err)
		}
		if err := bounded(t, "Lock after Close", func() error { return l.Lock("Change") }); !errors.Is(err, cuda.ErrClosed) || !strings.HasPrefix(err.Error(), "pkg: Change: ") {
			t.Errorf("Lock %d after Close: %v", i, err)
		}
		if err := bounded(t, "Close after Close", func() error { return l.Close(func() { cleared++ }) }); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Close %d after Close: %v", i, err)
		}
	}
	if cleared != 1 {
		t.Errorf("cleared ran %d times, want 1", cleared)
	}
	settle(t)
	if n := c.n.Load(); n != 1 {
		t.Errorf("%d destroys, want 1", n)
	}
}

// Close and Lock wait for the calls in progress; calls hold together.
func TestCloseWaitsForTheCallsInProgress(t *testing.T) {
	_, s := fixture(t)
	var c counter
	l, err := handle.Open(s, "pkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
	testenv.Must(t, err)
	testenv.Must(t, l.Acquire("Call"))
	// Another call holds beside it.
	if err := bounded(t, "a second Acquire", func() error {
		if err := l.Acquire("Call"); err != nil {
			return err
		}
		l.Release()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	locked := testenv.WaitAsync(func() error {
		if err := l.Lock("Change"); err != nil {
			return err
		}
		l.SetStream(s)
		l.Unlock()
		return nil
	})
	testenv.StillWaiting(t, "Lock while a call holds the handle", locked)
	l.Release()
	testenv.Finished(t, "Lock after the call", locked)
	testenv.Must(t, l.Acquire("Call"))
	closed := testenv.WaitAsync(func() error { return l.Close(nil) })
	testenv.StillWaiting(t, "Close while a call holds the handle", closed)
	if n := c.n.Load(); n != 0 {
		t.Errorf("destroyed while a call holds the handle")
	}
	l.Release()
	testenv.Finished(t, "Close after the call", closed)
	settle(t)
	if n := c.n.Load(); n != 1 {
		t.Errorf("%d destroys, want 1", n)
	}
}

// Do runs with the handle's context current, and keeps working after the
// Stream and the Context are closed: the Life holds the context until
// its destroy has run.
func TestDoRunsInTheHeldContext(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	ctx, err := devs[0].Context()
	testenv.Must(t, err)
	s, err := ctx.NewStream()
	testenv.Must(t, err)
	raw := ctx.Raw()
	var c counter
	l, err := handle.Open(s, "pkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
	testenv.Must(t, err)
	testenv.Must(t, s.Close())
	testenv.Must(t, ctx.Close())
	var cur libcuda.Context
	testenv.Must(t, l.Do(func() error { cur = current(); return nil }))
	if cur != raw {
		t.Errorf("Do ran in context %v, want %v", cur, raw)
	}
	testenv.Must(t, l.Close(nil))
	settle(t)
	if got := libcuda.Context(c.ctx.Load()); got != raw || c.n.Load() != 1 {
		t.Errorf("%d destroys, in context %v; want 1 in %v", c.n.Load(), got, raw)
	}
	if err := l.Do(func() error { return nil }); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Do after the destroy released the context: %v", err)
	}
}

// logRecord records slog's messages of every level for the rest of the
// test.
type logRecord struct {
	mu   gosync.Mutex
	msgs []string
}

func (h *logRecord) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecord) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.msgs = append(h.msgs, msg)
	return nil
}
func (h *logRecord) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecord) WithGroup(string) slog.Handler      { return h }
func (h *logRecord) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

func recordLogs(t *testing.T) *logRecord {
	h := &logRecord{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	return h
}

// Collected destroys a handle dropped without Close, once, logging a
// warning once for each kind of handle; after Close it does nothing.
func TestCollectedDestroysOnceAndWarnsOncePerKind(t *testing.T) {
	_, s := fixture(t)
	log := recordLogs(t)
	open := func(c *counter) *handle.Life {
		l, err := handle.Open(s, "collpkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
		testenv.Must(t, err)
		return l
	}
	var a, b, closed counter
	la, lb, lc := open(&a), open(&b), open(&closed)
	la.Collected("Thing")
	la.Collected("Thing")
	lb.Collected("Thing")
	testenv.Must(t, lc.Close(nil))
	lc.Collected("Thing")
	settle(t)
	if a.n.Load() != 1 || b.n.Load() != 1 || closed.n.Load() != 1 {
		t.Errorf("destroys %d, %d, %d; want one each", a.n.Load(), b.n.Load(), closed.n.Load())
	}
	if err := la.Acquire("Call"); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Acquire after Collected: %v", err)
	}
	var warns []string
	for _, m := range log.messages() {
		if strings.HasPrefix(m, "WARN collpkg: a Thing was dropped") {
			warns = append(warns, m)
		}
	}
	if len(warns) != 1 {
		t.Errorf("warnings %q, want one for the kind", warns)
	}
	var other counter
	open(&other).Collected("Other")
	settle(t)
	n := 0
	for _, m := range log.messages() {
		if strings.HasPrefix(m, "WARN collpkg: a Other was dropped") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings for another kind, want 1", n)
	}
}

// A destroy that fails is logged at level Error, naming the package.
func TestAFailedDestroyIsLogged(t *testing.T) {
	_, s := fixture(t)
	log := recordLogs(t)
	c := counter{err: errors.New("no destroy")}
	l, err := handle.Open(s, "failpkg", "pkgCreate", func(libcuda.Stream) error { return nil }, c.destroy)
	testenv.Must(t, err)
	testenv.Must(t, l.Close(nil))
	settle(t)
	found := false
	for _, m := range log.messages() {
		if strings.HasPrefix(m, "ERROR failpkg: destroying a handle") && strings.Contains(m, "no destroy") {
			found = true
		}
	}
	if !found {
		t.Errorf("logged %q, want the failed destroy", log.messages())
	}
}
