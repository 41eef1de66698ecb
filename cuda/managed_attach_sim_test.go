//go:build !gpu

package cuda_test

import (
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Each mode reaches the driver as its own flag (the simulator counts
// cuStreamAttachMemAsync calls by flag).
func TestManagedAttachPassesTheMode(t *testing.T) {
	f := newFixture(t)
	live := liveAllocations(t)
	m, err := cuda.AllocManaged[float32](f.ctx, 64, cuda.AttachGlobal)
	testenv.Must(t, err)
	defer func() {
		testenv.Must(t, m.Free())
		waitAllocations(t, live)
	}()
	for _, c := range []struct {
		mode cuda.Attach
		stat string
	}{{cuda.AttachGlobal, "attach_global"}, {cuda.AttachHost, "attach_host"}, {cuda.AttachSingle, "attach_single"}} {
		before := testenv.SimStat(t, c.stat)
		testenv.Must(t, f.s.Attach(m, c.mode))
		if got := testenv.SimStat(t, c.stat); got != before+1 {
			t.Errorf("Attach(%d): %s went from %d to %d, want one more", c.mode, c.stat, before, got)
		}
	}
	sync(t, f.s)
}
