package tests

import (
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/libcuda"
)

// osThread is a goroutine locked to its own OS thread, with a context
// current, that runs functions on request: "another thread" in the driver's
// sense.
type osThread struct {
	t    testing.TB
	work chan func()
}

func newOSThread(t testing.TB, cu libcuda.Context) *osThread {
	t.Helper()
	th := &osThread{t: t, work: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- libcuda.CtxSetCurrent(cu)
		for f := range th.work {
			f()
		}
	}()
	must(t, <-ready)
	t.Cleanup(func() { close(th.work) })
	return th
}

// do runs f on the thread and waits for it. When f stops its goroutine
// (a must or t.Fatal in f), the thread ends, and the test stops here.
func (th *osThread) do(f func()) {
	done := make(chan bool)
	th.work <- func() {
		finished := false
		defer func() { done <- finished }()
		f()
		finished = true
	}
	if !<-done {
		th.t.FailNow()
	}
}

// withMode runs f with the calling thread's capture mode set to mode and
// restores the previous mode after. It may run on any goroutine.
func withMode(t testing.TB, mode libcuda.StreamCaptureMode, f func()) {
	t.Helper()
	old := mode
	if err := libcuda.ThreadExchangeStreamCaptureMode(&old); err != nil {
		t.Errorf("cuThreadExchangeStreamCaptureMode: %v", err)
		return
	}
	defer func() {
		if err := libcuda.ThreadExchangeStreamCaptureMode(&old); err != nil {
			t.Errorf("cuThreadExchangeStreamCaptureMode (restore): %v", err)
		}
	}()
	f()
}
