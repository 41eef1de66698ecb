package hostmem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/internal/testenv/memtest"
)

// A Free while a submission holds the buffer takes effect for the memory
// at the last Unhold: the held submission's Use still counts, and the
// release waits for its work, not only for the uses before the Free.
func TestFreeDuringAHoldWaitsForTheHeldUse(t *testing.T) {
	testenv.NoErrorsLogged(t)
	cu := testenv.OnPrimary(t, 0)
	idle, s := testenv.NewStream(t), testenv.NewStream(t)
	g := testenv.NewGate(t)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	testenv.Must(t, b.Use(idle)) // an earlier use, whose work is done
	dptr, err := b.Hold()
	testenv.Must(t, err)
	if dptr == 0 || dptr != b.DevicePtr() {
		t.Fatalf("Hold returned %#x, DevicePtr %#x", dptr, b.DevicePtr())
	}
	testenv.MustBounded(t, "b.Free", b.Free)
	if _, err := b.Hold(); !errors.Is(err, hostmem.ErrFreed) {
		t.Errorf("Hold after Free: %v, want ErrFreed", err)
	}
	if p := b.DevicePtr(); p != dptr {
		t.Errorf("DevicePtr while held after Free = %#x, want %#x", p, dptr)
	}
	g.Hold(t, s)
	testenv.Must(t, b.Use(s)) // the held submission's work, behind the gate
	b.Unhold()
	if err := b.Use(s); !errors.Is(err, hostmem.ErrFreed) {
		t.Errorf("Use after the last Unhold: %v, want ErrFreed", err)
	}
	if p := b.DevicePtr(); p != 0 {
		t.Errorf("DevicePtr after the last Unhold = %#x, want 0", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	wait := testenv.WaitAsync(func() error { return hostmem.Wait(ctx) })
	testenv.StillWaiting(t, "the release", wait)
	g.Open()
	testenv.Finished(t, "the release", wait)
	memtest.Drain(t)
}

// A Free during a Hold counts as pending at once, and a hold that ends
// without a Use hands the release over all the same.
func TestFreeDuringAHoldIsPendingUntilUnhold(t *testing.T) {
	cu := testenv.OnPrimary(t, 0)
	memtest.Drain(t)
	b, err := hostmem.Wrap(cu, make([]byte, 8192))
	testenv.Must(t, err)
	_, err = b.Hold()
	testenv.Must(t, err)
	_, err = b.Hold() // holds nest
	testenv.Must(t, err)
	testenv.MustBounded(t, "b.Free", b.Free)
	if p := hostmem.ReadStats().Pending; p != 1 {
		t.Errorf("%d releases pending while held, want 1", p)
	}
	b.Unhold()
	if p := b.DevicePtr(); p == 0 {
		t.Error("DevicePtr = 0 while one Hold is still in progress")
	}
	b.Unhold()
	b.Unhold() // one too many: nothing happens
	memtest.Drain(t)
	if p := hostmem.ReadStats().Pending; p != 0 {
		t.Errorf("%d releases pending after Drain, want 0", p)
	}
}
