package cuda_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

func usage(t *testing.T, p *cuda.MemPool) cuda.MemPoolUsage {
	t.Helper()
	u, err := p.Usage()
	testenv.Must(t, err)
	return u
}

// A pool of one's own: its figures after an allocation, a free (the
// memory stays reserved under a high threshold) and a trim.
func TestMemPoolStatisticsAfterAllocFreeTrim(t *testing.T) {
	f := newFixture(t)
	p, err := cuda.NewMemPool(f.ctx.Device())
	testenv.Must(t, err)
	defer p.Close()
	testenv.Must(t, p.SetReleaseThreshold(math.MaxUint64))
	if th, err := p.ReleaseThreshold(); err != nil || th != math.MaxUint64 {
		t.Fatalf("ReleaseThreshold = %d, %v; want MaxUint64", th, err)
	}
	if u := usage(t, p); u.UsedCurrent != 0 || u.ReservedCurrent != 0 {
		t.Fatalf("a new pool: %+v, want nothing used or reserved", u)
	}
	const n = 1 << 20
	x, err := cuda.AllocFrom[byte](p, f.s, n)
	testenv.Must(t, err)
	testenv.Must(t, cuda.Zero(f.s, x))
	sync(t, f.s)
	u := usage(t, p)
	if u.UsedCurrent < n || u.ReservedCurrent < u.UsedCurrent || u.UsedHigh < n || u.ReservedHigh < u.ReservedCurrent {
		t.Fatalf("after AllocFrom of %d bytes: %+v", n, u)
	}
	testenv.MustBounded(t, "x.Free", x.Free)
	sync(t, f.s)
	u = usage(t, p)
	if u.UsedCurrent != 0 || u.ReservedCurrent < n || u.UsedHigh < n {
		t.Fatalf("after Free with the threshold at MaxUint64: %+v; want 0 used, the memory still reserved, the high mark kept", u)
	}
	// Only a synchronizing call shows the driver that the free is done
	// (on the H200, the Stream.Sync above did not: Trim(0) kept it).
	bounded, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	testenv.MustBounded(t, "f.ctx.Sync", func() error { return f.ctx.Sync(bounded) })
	testenv.Must(t, p.Trim(0))
	if u = usage(t, p); u.ReservedCurrent != 0 || u.ReservedHigh < n {
		t.Fatalf("after Trim(0): %+v; want nothing reserved, the high mark kept", u)
	}
	testenv.Must(t, p.ResetHighWater())
	if u = usage(t, p); u.UsedHigh != 0 || u.ReservedHigh != 0 {
		t.Fatalf("after ResetHighWater: %+v; want the high marks at the current 0", u)
	}
	testenv.MustBounded(t, "p.Close", p.Close)
	if err := testenv.BoundedErr(t, "p.Close", p.Close); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if _, err := cuda.AllocFrom[byte](p, f.s, 16); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("AllocFrom a closed pool: %v, want ErrClosed", err)
	}
}

// The device's default pool serves Alloc: its used figure counts an
// allocation while it lives.
func TestDefaultMemPoolServesAlloc(t *testing.T) {
	f := newFixture(t)
	p, err := f.ctx.MemPool()
	testenv.Must(t, err)
	sync(t, f.s)
	before := usage(t, p)
	const n = 4 << 20
	x, err := cuda.Alloc[byte](f.s, n)
	testenv.Must(t, err)
	sync(t, f.s)
	if u := usage(t, p); u.UsedCurrent < before.UsedCurrent+n {
		t.Errorf("after Alloc of %d bytes the default pool uses %d (before %d)", n, u.UsedCurrent, before.UsedCurrent)
	}
	testenv.MustBounded(t, "x.Free", x.Free)
	sync(t, f.s)
	// Frees of earlier tests may end meanwhile: at most what it used before.
	if u := usage(t, p); u.UsedCurrent > before.UsedCurrent {
		t.Errorf("after Free the default pool uses %d, before %d", u.UsedCurrent, before.UsedCurrent)
	}
	if err := testenv.BoundedErr(t, "p.Close", p.Close); err == nil {
		t.Error("Close of the default pool succeeded")
	}
	if p.Device() != f.ctx.Device() {
		t.Errorf("the default pool is on device %d", p.Device().Ordinal())
	}
}

func TestAllocFromAPoolOfAnotherDeviceIsRefused(t *testing.T) {
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) < 2 {
		t.Skipf("needs 2 devices; this machine has %d", len(devs))
	}
	f := newFixture(t)
	p, err := cuda.NewMemPool(devs[1])
	testenv.Must(t, err)
	defer testenv.MustBounded(t, "p.Close", p.Close)
	if _, err := cuda.AllocFrom[byte](p, f.s, 16); err == nil {
		t.Error("AllocFrom a pool of device 1 on a stream of device 0 succeeded")
	}
}
