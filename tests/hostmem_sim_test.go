//go:build !gpu && linux

package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// Fault injection needs the simulator.

func TestUnregisterFailureIsLoggedOnceAndKeepsTheMemory(t *testing.T) {
	errs := captureErrors(t)
	cu := primaryContext(t, 0)
	onThread(t, cu)
	s := newStream(t)
	drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	must(t, err)
	must(t, b.Use(s))
	must(t, b.Free())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for hostmem.ReadStats().Pending > 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	before := hostmem.ReadStats() // other tests may have kept memory already
	simFailNext(t, "cuMemHostUnregister", 1, libcuda.CUDA_ERROR_UNKNOWN)
	if n := hostmem.Trim(); n != 1 {
		t.Fatalf("Trim ended %d registrations, want 1", n)
	}
	st := hostmem.ReadStats()
	if st.Failures != before.Failures+1 || st.Kept != before.Kept+1 || st.Registrations != 0 {
		t.Fatalf("after the failed unregister: %+v, before %+v; want 1 more failure and 1 more kept", st, before)
	}
	msgs := errs.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "addr=") || !strings.Contains(msgs[0], "size=8192") || !strings.Contains(msgs[0], "CUDA_ERROR_UNKNOWN") {
		t.Fatalf("logged %q, want one message with the address, size and error", msgs)
	}
	// Nothing else breaks.
	c, err := hostmem.Wrap(cu, make([]int32, 4096))
	must(t, err)
	must(t, c.Use(s))
	must(t, c.Free())
	drain(t)
	if n := len(errs.messages()); n != 1 {
		t.Fatalf("%d messages logged, want still 1", n)
	}
}
