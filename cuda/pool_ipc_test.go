package cuda_test

import (
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
)

// SetMemPool makes a pool of one's own the device's current pool: Alloc
// takes its memory from there (the pool's used bytes grow) until nil makes
// the default current again; closing a current pool does the same.
func TestDeviceSetMemPoolRoutesAlloc(t *testing.T) {
	f := newFixture(t)
	d := f.ctx.Device()
	def, err := f.ctx.MemPool()
	testenv.Must(t, err)
	cur, err := d.MemPool()
	testenv.Must(t, err)
	if cur.Raw() != def.Raw() {
		t.Fatalf("the current pool %#x is not the default %#x at first", cur.Raw(), def.Raw())
	}
	p, err := cuda.NewMemPool(d)
	testenv.Must(t, err)
	closed := false
	defer func() {
		if !closed {
			testenv.Must(t, d.SetMemPool(nil))
			testenv.Must(t, p.Close())
		}
	}()
	testenv.Must(t, d.SetMemPool(p))
	if cur, err = d.MemPool(); err != nil || cur.Raw() != p.Raw() {
		t.Fatalf("after SetMemPool: current %#x, %v; want %#x", cur.Raw(), err, p.Raw())
	}
	if err := cur.Close(); err == nil {
		t.Error("Close of Device.MemPool's value succeeded")
	}
	x, err := cuda.Alloc[byte](f.s, 1<<20)
	testenv.Must(t, err)
	sync(t, f.s)
	if u := usage(t, p); u.UsedCurrent < 1<<20 {
		t.Errorf("after Alloc with the pool current, it uses %d bytes, want at least %d", u.UsedCurrent, 1<<20)
	}
	testenv.Must(t, x.Free())
	sync(t, f.s)
	testenv.Must(t, d.SetMemPool(nil))
	if cur, err = d.MemPool(); err != nil || cur.Raw() != def.Raw() {
		t.Errorf("after SetMemPool(nil): current %#x, %v; want the default %#x", cur.Raw(), err, def.Raw())
	}
	testenv.Must(t, d.SetMemPool(p))
	closed = true
	testenv.Must(t, p.Close())
	if cur, err = d.MemPool(); err != nil || cur.Raw() != def.Raw() {
		t.Errorf("after closing the current pool: current %#x, %v; want the default %#x", cur.Raw(), err, def.Raw())
	}
	if err := d.SetMemPool(p); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("SetMemPool of a closed pool: %v, want ErrClosed", err)
	}
}

// A pool's own device reads and writes its memory, and that cannot be
// taken away (the simulator refuses the call; whether the driver refuses
// or ignores it, the access stays); another device may be given access (where it can reach the
// first as a peer).
func TestMemPoolAccess(t *testing.T) {
	f := newFixture(t)
	d := f.ctx.Device()
	p, err := cuda.NewMemPool(d)
	testenv.Must(t, err)
	defer p.Close()
	if a, err := p.Access(d); err != nil || a != cuda.PoolAccessReadWrite {
		t.Errorf("the pool's own device has access %v, %v; want read-write", a, err)
	}
	err = p.SetAccess(d, cuda.PoolAccessRead)
	if a, aerr := p.Access(d); aerr != nil || a != cuda.PoolAccessReadWrite {
		t.Errorf("after SetAccess of the pool's own device to read-only (%v), its access is %v, %v; want read-write still", err, a, aerr)
	}
	devs, err := cuda.Devices()
	testenv.Must(t, err)
	if len(devs) < 2 {
		t.Skipf("the rest needs 2 devices; this machine has %d", len(devs))
	}
	if ok, err := devs[1].CanAccessPeer(d); err != nil || !ok {
		t.Skipf("device 1 cannot reach device 0 as a peer (%v)", err)
	}
	if a, err := p.Access(devs[1]); err != nil || a != cuda.PoolAccessNone {
		t.Errorf("another device has access %v, %v at first; want none", a, err)
	}
	testenv.Must(t, p.SetAccess(devs[1], cuda.PoolAccessReadWrite))
	if a, err := p.Access(devs[1]); err != nil || a != cuda.PoolAccessReadWrite {
		t.Errorf("after SetAccess: %v, %v; want read-write", a, err)
	}
	testenv.Must(t, p.SetAccess(devs[1], cuda.PoolAccessNone))
	if a, err := p.Access(devs[1]); err != nil || a != cuda.PoolAccessNone {
		t.Errorf("after SetAccess(none): %v, %v", a, err)
	}
}

// ExportPointer takes a whole allocation only; a PoolPointer goes through
// its 72 bytes unchanged; ImportPointer refuses a length that is no whole
// number of elements, before the driver.
func TestPoolPointerChecks(t *testing.T) {
	f := newFixture(t)
	x := alloc(t, f.s, make([]int32, 16))
	part, err := x.Slice(4, 8)
	testenv.Must(t, err)
	if _, err := cuda.ExportPointer(part); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("ExportPointer of a part: %v, want ErrLength", err)
	}
	if _, err := cuda.ExportPointer(cuda.Slice[int32]{}); !errors.Is(err, cuda.ErrNil) {
		t.Errorf("ExportPointer of the zero Slice: %v, want ErrNil", err)
	}
	var p cuda.PoolPointer
	for i := range p.Data {
		p.Data[i] = byte(i * 7)
	}
	p.Bytes = 1 << 40
	b, err := p.MarshalBinary()
	testenv.Must(t, err)
	var q cuda.PoolPointer
	testenv.Must(t, q.UnmarshalBinary(b))
	if q != p {
		t.Errorf("a PoolPointer through MarshalBinary and UnmarshalBinary: %+v, want %+v", q, p)
	}
	if err := q.UnmarshalBinary(b[:71]); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("UnmarshalBinary of 71 bytes: %v, want ErrLength", err)
	}
	def, err := f.ctx.MemPool()
	testenv.Must(t, err)
	if _, err := cuda.ImportPointer[int32](def, f.s, cuda.PoolPointer{Bytes: 6}); !errors.Is(err, cuda.ErrLength) {
		t.Errorf("ImportPointer of 6 bytes as int32: %v, want ErrLength", err)
	}
}

// A pool made without Exportable cannot be exported, nor its allocations.
func TestPoolIPCNeedsExportable(t *testing.T) {
	f := newFixture(t)
	pool, err := cuda.NewMemPool(f.ctx.Device())
	testenv.Must(t, err)
	defer pool.Close()
	if file, err := pool.Export(); err == nil {
		file.Close()
		t.Error("Export of a pool made without Exportable succeeded")
	}
	x, err := cuda.AllocFrom[int32](pool, f.s, 8)
	testenv.Must(t, err)
	if _, err := cuda.ExportPointer(x); err == nil {
		t.Error("ExportPointer of an allocation of a pool made without Exportable succeeded")
	}
	testenv.Must(t, x.Free())
	sync(t, f.s)
}
