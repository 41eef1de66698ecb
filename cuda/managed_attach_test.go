package cuda_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Managed memory attached (Stream.Attach) to one stream, then to the host, then to every
// stream: each Attach is accepted in stream order, a kernel on the stream
// it is attached to sees the host's data, and the host reads the kernel's
// result once the stream is idle. A mode Attach does not know is refused
// before the driver; Attach after Free matches ErrFreed.
func TestManagedAttachSingleHostGlobal(t *testing.T) {
	f := newFixture(t)
	live := liveAllocations(t)
	const n = 1024
	m, err := cuda.AllocManaged[int32](f.ctx, n, cuda.AttachHost)
	testenv.Must(t, err)
	for i := range m.Data() {
		m.Data()[i] = int32(i)
	}
	testenv.Must(t, f.s.Attach(m, cuda.AttachSingle))
	testenv.Must(t, f.s.Launch(f.fn(t, "add_one_i32"), cuda.Grid(n/256, 1, 1), cuda.Block(256, 1, 1), m.Arg(), cuda.Uint64(n)))
	testenv.Must(t, f.s.Attach(m, cuda.AttachHost))
	sync(t, f.s)
	for i, v := range m.Data() {
		if v != int32(i+1) {
			t.Fatalf("element %d = %d after add_one on the attached stream, want %d", i, v, i+1)
		}
	}
	testenv.Must(t, f.s.Attach(m, cuda.AttachGlobal))
	sync(t, f.s)
	if err := f.s.Attach(m, cuda.Attach(3)); err == nil {
		t.Error("Attach with mode 3 succeeded")
	}
	var none *cuda.Stream
	if err := none.Attach(m, cuda.AttachGlobal); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Attach on a nil stream: %v, want ErrNil", err)
	}
	var nothing *cuda.Managed[int32]
	if err := f.s.Attach(nothing, cuda.AttachGlobal); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Attach of a nil Managed: %v, want ErrNil", err)
	}
	if err := f.s.Attach(nil, cuda.AttachGlobal); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("Attach of nil: %v, want ErrNil", err)
	}
	testenv.Must(t, m.Free())
	if err := f.s.Attach(m, cuda.AttachGlobal); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("Attach after Free: %v, want ErrFreed", err)
	}
	waitAllocations(t, live)
}
