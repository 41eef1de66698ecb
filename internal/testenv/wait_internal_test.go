package testenv

import (
	"fmt"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// fakeTB records a failure and ends the goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	mu  gosync.Mutex
	msg string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) FailNow() { f.Fatalf("FailNow") }

// blockedOnALock stands for a call stuck on a lock kept by an error path.
//
//go:noinline
func blockedOnALock(mu *gosync.Mutex) { mu.Lock() }

// A bounded call that blocks fails the test after its limit, naming the
// call and showing where it is stuck; one that returns does not.
func TestBoundedFailsWithTheStuckGoroutinesStack(t *testing.T) {
	var mu gosync.Mutex
	mu.Lock() // kept: the call below blocks
	defer mu.Unlock()
	f := &fakeTB{}
	done := Go(func() { boundedFor(f, 50*time.Millisecond, "the stuck call", func() { blockedOnALock(&mu) }) })
	Recv(t, done, "boundedFor to give up")
	if !strings.Contains(f.msg, "the stuck call did not return within 50ms") || !strings.Contains(f.msg, "testenv.blockedOnALock") {
		t.Fatalf("the failure of a stuck call: %q; want its name, its limit and its stack", f.msg)
	}
	if strings.Contains(f.msg, "TestBoundedFailsWithTheStuckGoroutinesStack(") {
		t.Errorf("the failure shows other goroutines than the stuck one:\n%s", f.msg)
	}

	ok := &fakeTB{}
	Recv(t, Go(func() { boundedFor(ok, Timeout, "a call that returns", func() {}) }), "boundedFor to return")
	if ok.msg != "" {
		t.Fatalf("a call that returned failed: %s", ok.msg)
	}
	if err := BoundedErr(t, "an error", func() error { return fmt.Errorf("x") }); err == nil || err.Error() != "x" {
		t.Fatalf("BoundedErr returned %v, want f's error", err)
	}
}
