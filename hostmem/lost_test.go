package hostmem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Releases of memory used in a context that a kernel fault has lost
// cannot learn whether the GPU is done with it (every query fails): they
// keep the memory registered and pinned, log that once for the context,
// and Drain returns. In a child process: the fault loses the device for
// the process.
func TestReleasesInALostContextKeepTheMemoryLogOnceAndDrainReturns(t *testing.T) {
	if !testenv.InChild(t) {
		return
	}
	logged := testenv.CaptureErrors(t)
	f := testenv.NewFault(t)
	cu, s, bad, d := f.Ctx, f.Stream, f.Bad, f.Mem
	before := hostmem.ReadStats()
	const used = 4
	var bufs []*hostmem.Buffer
	for i := range used + 1 {
		b, err := hostmem.Wrap(cu, make([]int32, 1024))
		testenv.Must(t, err)
		if i < used { // the last is never used on a stream: its release waits for the context
			testenv.Must(t, libcuda.MemcpyHtoDAsync(d, b.Pointer(), 4096, s))
			testenv.Must(t, b.Use(s))
		}
		bufs = append(bufs, b)
	}
	f.Launch(t)
	if err := libcuda.StreamSynchronize(bad); !strings.Contains(code(err), "CUDA_ERROR") {
		t.Fatalf("the fault: cuStreamSynchronize = %v", err)
	}
	for _, b := range bufs {
		testenv.MustBounded(t, "b.Free", b.Free)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	if err := hostmem.Drain(ctx); err != nil {
		t.Fatalf("Drain in a lost context: %v, want it to return", err)
	}
	st := hostmem.ReadStats()
	if st.Pending != 0 || st.Kept-before.Kept != used+1 {
		t.Errorf("after Drain: %d releases pending, %d ranges kept pinned; want 0 and %d", st.Pending, st.Kept-before.Kept, used+1)
	}
	msgs := logged.Messages()
	for _, m := range msgs {
		t.Logf("logged: %s", m)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "lost") {
		t.Errorf("%d errors logged, want 1 that says the context is lost", len(msgs))
	}
}

func code(err error) string {
	if err == nil {
		return "success"
	}
	return err.Error()
}
