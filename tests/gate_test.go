package tests

import (
	"testing"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/internal/testenv"
)

// Gate.Hold runs BeforeHold (hostmem.Trim, set by TestMain, so that no
// background unregister, which would wait for the held stream, is in
// flight) before it holds a stream, but not while another gate is closed:
// Trim would wait for that gate.
func TestGateHoldRunsBeforeHoldUnlessAGateIsClosed(t *testing.T) {
	testenv.OnPrimary(t, 0)
	prev := testenv.BeforeHold
	if prev == nil {
		t.Fatal("TestMain set no BeforeHold")
	}
	calls := 0
	testenv.BeforeHold = func() { calls++; prev() }
	t.Cleanup(func() { testenv.BeforeHold = prev })

	s1, s2 := testenv.NewStream(t), testenv.NewStream(t)
	g1, g2 := testenv.NewGate(t), testenv.NewGate(t)
	g1.Hold(t, s1)
	if calls != 1 {
		t.Errorf("the first hold ran BeforeHold %d times, want 1", calls)
	}
	if n := hostmem.ReadStats().Retired; n != 0 {
		t.Errorf("%d retired registrations left after the first hold, want 0", n)
	}
	g2.Hold(t, s2)
	if calls != 1 {
		t.Errorf("a hold while another gate is closed ran BeforeHold (%d calls, want 1)", calls)
	}
	g1.Open()
	g2.Open()
	g3 := testenv.NewGate(t)
	g3.Hold(t, s1)
	if calls != 2 {
		t.Errorf("a hold once the other gates opened ran BeforeHold %d times in all, want 2", calls)
	}
	g3.Open()
}
