package cuda_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

func TestAllocOfZeroIsAnEmptySlice(t *testing.T) {
	f := newFixture(t)
	x, err := cuda.Alloc[float32](f.s, 0)
	testenv.Must(t, err)
	if x.Len() != 0 || x.Bytes() != 0 {
		t.Errorf("Alloc(0): Len %d, Bytes %d", x.Len(), x.Bytes())
	}
	if x.Device() != f.ctx.Device() {
		t.Errorf("Alloc(0).Device() = %v, want %v", x.Device(), f.ctx.Device())
	}
	testenv.Must(t, cuda.CopyToDevice(f.s, x, []float32{}))
	testenv.Must(t, cuda.CopyToHost(f.s, []float32{}, x))
	testenv.Must(t, cuda.Copy(f.s, x, x))
	testenv.Must(t, cuda.Zero(f.s, x))
	if err := cuda.CopyToDevice(f.s, x, []float32{1}); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("CopyToDevice of 1 into an empty Slice: %v, want ErrLength", err)
	}
	testenv.MustBounded(t, "x.Free", x.Free)
	if err := testenv.BoundedErr(t, "x.Free", x.Free); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("second Free of an empty Slice: %v, want ErrFreed", err)
	}
}

func TestSliceSaysItsDevice(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	for _, d := range devs {
		ctx, err := d.Context()
		testenv.Must(t, err)
		s := newStream(t, ctx)
		x := alloc(t, s, []int32{1, 2, 3})
		if x.Device() != d {
			t.Errorf("a Slice allocated on device %d says device %d", d.Ordinal(), x.Device().Ordinal())
		}
		y, err := x.Slice(1, 2)
		testenv.Must(t, err)
		if y.Device() != d {
			t.Errorf("a part of it says device %d", y.Device().Ordinal())
		}
		testenv.MustBounded(t, "ctx.Close", ctx.Close)
	}
	if (cuda.Slice[int32]{}).Device() != (cuda.Device{}) {
		t.Error("the zero Slice names a device")
	}
}

// Query says not done while a gate holds the stream and done after.
func TestStreamQuery(t *testing.T) {
	testenv.OnPrimary(t, 0)
	f := newFixture(t)
	s := newStream(t, f.ctx, cuda.NonBlocking())
	done, err := s.Query()
	testenv.Must(t, err)
	if !done {
		t.Error("Query of an idle stream: not done")
	}
	gate := testenv.NewGate(t)
	gate.Hold(t, s.Raw())
	done, err = s.Query()
	testenv.Must(t, err)
	if done {
		t.Error("Query of a held stream: done")
	}
	gate.Open()
	sync(t, s)
	done, err = s.Query()
	testenv.Must(t, err)
	if !done {
		t.Error("Query after Sync: not done")
	}
	testenv.MustBounded(t, "s.Close", s.Close)
	if _, err := s.Query(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Query after Close: %v, want ErrClosed", err)
	}
}

func TestStreamQueryInsideItsCaptureIsRefused(t *testing.T) {
	f := newFixture(t)
	g, err := f.s.Capture(func(s *cuda.Stream) error {
		_, err := s.Query()
		if !errors.Is(err, cuda.ErrCapturing) {
			return fmt.Errorf("Query inside the capture: %v, want ErrCapturing", err)
		}
		return nil
	})
	testenv.Must(t, err)
	testenv.MustBounded(t, "g.Destroy", g.Destroy)
}

func TestDeviceUUIDAndPCIBusID(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	seen := map[cuda.UUID]int{}
	form := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	bus := regexp.MustCompile(`^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-9a-fA-F])$`)
	for _, d := range devs {
		u, err := d.UUID()
		testenv.Must(t, err)
		if u == (cuda.UUID{}) {
			t.Errorf("device %d: zero UUID", d.Ordinal())
		}
		if o, dup := seen[u]; dup {
			t.Errorf("devices %d and %d have one UUID %v", o, d.Ordinal(), u)
		}
		seen[u] = d.Ordinal()
		if !form.MatchString(u.String()) {
			t.Errorf("device %d: UUID %q is not in nvidia-smi's form", d.Ordinal(), u)
		}
		id, err := d.PCIBusID()
		testenv.Must(t, err)
		m := bus.FindStringSubmatch(id)
		if m == nil {
			t.Errorf("device %d: PCI bus id %q is not dddd:bb:dd.f", d.Ordinal(), id)
			continue
		}
		// The address agrees with the device's PCI attributes.
		for i, a := range []libcuda.Device_attribute{libcuda.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, libcuda.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, libcuda.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID} {
			v, err := d.Attribute(a)
			testenv.Must(t, err)
			var got int
			fmt.Sscanf(m[i+1], "%x", &got)
			if got != v {
				t.Errorf("device %d: PCI bus id %q has %x where %v is %x", d.Ordinal(), id, got, a, v)
			}
		}
	}
	var u cuda.UUID
	for i := range u {
		u[i] = byte(i * 17)
	}
	if got, want := u.String(), "GPU-00112233-4455-6677-8899-aabbccddeeff"; got != want {
		t.Errorf("UUID.String() = %q, want %q", got, want)
	}
}

// The named getters read the attributes they name.
func TestNamedDeviceAttributes(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	d := devs[0]
	ints := []struct {
		get  func() (int, error)
		attr libcuda.Device_attribute
	}{
		{d.SharedMemoryPerBlock, libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
		{d.SharedMemoryPerBlockOptin, libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
		{d.SharedMemoryPerMultiprocessor, libcuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
		{d.MaxThreadsPerMultiprocessor, libcuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
		{d.L2CacheSize, libcuda.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
		{d.MemoryBusWidth, libcuda.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
		{d.AsyncEngineCount, libcuda.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT},
	}
	for _, c := range ints {
		got, err := c.get()
		testenv.Must(t, err)
		want, err := d.Attribute(c.attr)
		testenv.Must(t, err)
		if got != want || got <= 0 {
			t.Errorf("getter of %v = %d, Attribute %d (want equal and positive)", c.attr, got, want)
		}
	}
	bools := []struct {
		get  func() (bool, error)
		attr libcuda.Device_attribute
	}{
		{d.Integrated, libcuda.CU_DEVICE_ATTRIBUTE_INTEGRATED},
		{d.UnifiedAddressing, libcuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
		{d.ManagedMemory, libcuda.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
		{d.ConcurrentManagedAccess, libcuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
		{d.PageableMemoryAccess, libcuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS},
		{d.MemoryPoolsSupported, libcuda.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED},
		{d.CooperativeLaunch, libcuda.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH},
		{d.ClusterLaunch, libcuda.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH},
	}
	for _, c := range bools {
		got, err := c.get()
		testenv.Must(t, err)
		want, err := d.Attribute(c.attr)
		testenv.Must(t, err)
		if got != (want != 0) {
			t.Errorf("getter of %v = %v, Attribute %d", c.attr, got, want)
		}
	}
	for _, c := range []struct {
		get  func() (cuda.Dim3, error)
		attr [3]libcuda.Device_attribute
	}{
		{d.MaxBlockDim, [3]libcuda.Device_attribute{libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, libcuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z}},
		{d.MaxGridDim, [3]libcuda.Device_attribute{libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, libcuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z}},
	} {
		got, err := c.get()
		testenv.Must(t, err)
		for i, v := range []int{got.X, got.Y, got.Z} {
			want, err := d.Attribute(c.attr[i])
			testenv.Must(t, err)
			if v != want || v <= 0 {
				t.Errorf("%v: %d, want %d", c.attr[i], v, want)
			}
		}
	}
}

func TestEnablePeerAccessRefusesOneDevice(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	a, err := devs[0].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "a.Close", a.Close)
	b, err := devs[0].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "b.Close", b.Close)
	if err := a.EnablePeerAccess(b); err == nil {
		t.Error("EnablePeerAccess between two contexts of one device succeeded")
	}
	can, err := devs[0].CanAccessPeer(devs[0])
	testenv.Must(t, err)
	if can {
		t.Error("a device says it is its own peer")
	}
	if err := a.EnablePeerAccess(nil); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("EnablePeerAccess(nil): %v, want ErrNil", err)
	}
}

// Needs two devices: the simulator has them (PURECUDA_SIM_DEVICES=2).
func TestCopyPeerBetweenTwoDevices(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) < 2 {
		t.Skipf("needs 2 devices; this machine has %d", len(devs))
	}
	ctx0, err := devs[0].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "ctx0.Close", ctx0.Close)
	ctx1, err := devs[1].Context()
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "ctx1.Close", ctx1.Close)
	can, err := devs[0].CanAccessPeer(devs[1])
	testenv.Must(t, err)
	if can {
		testenv.Must(t, ctx0.EnablePeerAccess(ctx1))
		testenv.Must(t, ctx0.EnablePeerAccess(ctx1)) // again: not an error
		testenv.Must(t, ctx1.EnablePeerAccess(ctx0))
	}
	s0, s1 := newStream(t, ctx0), newStream(t, ctx1)
	want := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	x := alloc(t, s0, want)
	y, err := cuda.Alloc[int32](s1, len(want))
	testenv.Must(t, err)
	sync(t, s0) // the copy on s1 reads what s0 wrote
	testenv.Must(t, cuda.CopyPeer(s1, y, x))
	if got := read(t, s1, y); !slices.Equal(got, want) {
		t.Errorf("after CopyPeer to device 1: %v, want %v", got, want)
	}
	if y.Device() != devs[1] {
		t.Errorf("the copy's Slice says device %d", y.Device().Ordinal())
	}
	// y was used on s1 only, x on s0 and s1: both Frees order themselves
	// after the copy and succeed.
	testenv.MustBounded(t, "y.Free", y.Free)
	testenv.MustBounded(t, "x.Free", x.Free)
	if err := testenv.BoundedErr(t, "cuda.CopyPeer", func() error { return cuda.CopyPeer(s0, x, y) }); !errors.Is(err, cuda.ErrFreed) {
		t.Errorf("CopyPeer after Free: %v, want ErrFreed", err)
	}
	z, err := cuda.Alloc[int32](s0, 3)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "z.Free", z.Free)
	w, err := cuda.Alloc[int32](s1, 4)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "w.Free", w.Free)
	if err := cuda.CopyPeer(s0, w, z); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("CopyPeer of 3 into 4: %v, want ErrLength", err)
	}
}

func TestAllocPitchAndCopy2D(t *testing.T) {
	f := newFixture(t)
	const w, h = 5, 3
	p, err := cuda.AllocPitch[int32](f.s, w, h)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "p.Free", p.Free)
	if p.Width() != w || p.Height() != h || p.Pitch() < w*4 || p.Pitch()%512 != 0 {
		t.Fatalf("AllocPitch(%d, %d): %d×%d, pitch %d", w, h, p.Width(), p.Height(), p.Pitch())
	}
	host := make([]int32, w*h)
	for i := range host {
		host[i] = int32(i + 1)
	}
	testenv.Must(t, cuda.Zero(f.s, p.Slice()))
	testenv.Must(t, cuda.CopyToDevice2D(f.s, p, host))
	// Row 1 holds elements 5..9 of host; the padding after it is untouched.
	row, err := p.Row(1)
	testenv.Must(t, err)
	if got := read(t, f.s, row); !slices.Equal(got, host[w:2*w]) {
		t.Errorf("row 1: %v, want %v", got, host[w:2*w])
	}
	all := read(t, f.s, p.Slice())
	if pad := all[w : p.Pitch()/4]; slices.ContainsFunc(pad, func(v int32) bool { return v != 0 }) {
		t.Errorf("padding after row 0 was written: %v", pad)
	}
	// A 3×2 rectangle of p, copied device to device into a dense Slice
	// viewed with pitch 3, and back to the host.
	sub, err := p.Sub(1, 1, 3, 2)
	testenv.Must(t, err)
	dense, err := cuda.Alloc[int32](f.s, 6)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "dense.Free", dense.Free)
	dv, err := cuda.AsPitched(dense, 3, 2, 3)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Copy2D(f.s, dv, sub))
	got := make([]int32, 6)
	testenv.Must(t, cuda.CopyToHost2D(f.s, got, sub))
	want := []int32{7, 8, 9, 12, 13, 14}
	if !slices.Equal(got, want) {
		t.Errorf("CopyToHost2D of Sub(1, 1, 3, 2): %v, want %v", got, want)
	}
	if got := read(t, f.s, dense); !slices.Equal(got, want) {
		t.Errorf("Copy2D into a dense view: %v, want %v", got, want)
	}
	// Pinned host side.
	pin, err := cuda.AllocPinned[int32](f.ctx, 6)
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "pin.Free", pin.Free)
	testenv.Must(t, cuda.CopyToHost2D(f.s, pin, sub))
	sync(t, f.s)
	if !slices.Equal(pin.Data(), want) {
		t.Errorf("CopyToHost2D into pinned memory: %v, want %v", pin.Data(), want)
	}
	// Shapes are checked.
	if err := cuda.Copy2D(f.s, dv, p); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("Copy2D of 5×3 into 3×2: %v, want ErrLength", err)
	}
	if err := cuda.CopyToDevice2D(f.s, p, host[:4]); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("CopyToDevice2D of 4 elements into 5×3: %v, want ErrLength", err)
	}
	if _, err := p.Sub(3, 0, 3, 1); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("Sub past the width: %v, want ErrLength", err)
	}
	if _, err := cuda.AsPitched(dense, 3, 3, 3); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("AsPitched of 9 elements over 6: %v, want ErrLength", err)
	}
	if _, err := cuda.AsPitched(dense, 3, 2, 2); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("AsPitched with a pitch under the width: %v, want ErrLength", err)
	}
}
