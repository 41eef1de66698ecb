//go:build !gpu

package hostmem_test

import (
	"runtime"
	"testing"

	"github.com/purecuda/purecuda/graph"
	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// Behaviours that nothing else guarded (issue 23, items 11 and 15; item
// 10 is TestFailedEventQueryKeepsOnlyThatMemory's): each test fails when
// the behaviour it names breaks.

// A Use on the legacy stream while another goroutine captures, of a buffer
// used on a tracked stream before, cannot be tracked (no event may be
// recorded there during a capture): the release waits for the tracked
// stream's event and then for the whole context, which is postponed until
// the capture ends (Postponed counts it), and ends after.
func TestALegacyUseDuringACaptureBesideATrackedUsePostponesTheRelease(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	dev := deviceMemory(t)
	tracked := testenv.NewStream(t)
	captured := testenv.NewStream(t)
	b, err := hostmem.Wrap(cu, make([]byte, 4096))
	testenv.Must(t, err)
	testenv.Must(t, libcuda.MemsetD8Async(b.DevicePtr(), 1, 4096, tracked))
	testenv.Must(t, b.Use(tracked))

	inCapture, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	done := testenv.WaitAsync(func() error {
		g, err := graph.Capture(captured, libcuda.CU_STREAM_CAPTURE_MODE_GLOBAL, func(s libcuda.Stream) error {
			close(inCapture)
			<-release
			return libcuda.MemsetD8Async(dev, 2, 64, s)
		})
		if err == nil {
			err = g.Destroy()
		}
		return err
	})
	testenv.Recv(t, inCapture, "the capture in progress")
	testenv.Must(t, b.Use(libcuda.CU_STREAM_LEGACY))
	testenv.MustBounded(t, "b.Free", b.Free)
	testenv.Eventually(t, "the release postponed behind the capture", func() bool {
		return hostmem.ReadStats().Postponed == 1
	})
	if st := hostmem.ReadStats(); st.Pending != 1 {
		t.Fatalf("during the capture: %+v; want the release pending", st)
	}
	close(release)
	testenv.Must(t, testenv.Recv(t, done, "the capture"))
	waitReleases(t)
	if st := hostmem.ReadStats(); st.Pending != 0 || st.Postponed != 0 {
		t.Fatalf("after the capture: %+v; want the release ended", st)
	}
	drainOnly(t)
}

// RetiredBytes follows a registration through its life: wrapped (in use:
// 0), freed and retired (its bytes), wrapped again (revived: 0), retired
// again, and unregistered by Drain (0); and a retired registration whose
// context is destroyed leaves it when Drain lets it go.
func TestRetiredBytesFollowARegistration(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	drainOnly(t)
	s := testenv.NewStream(t)
	const n = 3 * 4096
	mem := make([]byte, n)
	retired := func(when string, want int64) {
		t.Helper()
		if got := hostmem.ReadStats().RetiredBytes; got != want {
			t.Fatalf("%s: RetiredBytes %d, want %d", when, got, want)
		}
	}
	cycle := func(when string) {
		t.Helper()
		b, err := hostmem.Wrap(cu, mem)
		testenv.Must(t, err)
		retired(when+", wrapped", 0)
		testenv.Must(t, libcuda.MemsetD8Async(b.DevicePtr(), 1, n, s))
		testenv.Must(t, b.Use(s))
		testenv.MustBounded(t, "b.Free", b.Free)
		waitReleases(t)
		retired(when+", freed and retired", n)
	}
	cycle("first")
	regs := hostmem.ReadStats().Registers
	cycle("again (revived)")
	if r := hostmem.ReadStats().Registers; r != regs {
		t.Fatalf("the second wrap registered again (%d registers, was %d); want the retired one revived", r, regs)
	}
	drainOnly(t)
	retired("after Drain", 0)

	var dev libcuda.Device
	testenv.Must(t, libcuda.CtxGetDevice(&dev))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	retiredInADestroyedContext(t, dev, mem)
	testenv.Must(t, libcuda.CtxSetCurrent(cu))
	drainOnly(t)
	retired("after Drain let the destroyed context's registration go", 0)
}
