//go:build !gpu

package sync

import (
	"context"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
)

// pollerSleeping reports whether the shared poller sleeps between rounds
// now.
func pollerSleeping() bool {
	return shared.sleeping.Load()
}

// sleepingPoller has the poller's sleeps last an hour, puts a Polling
// wait on a held stream there and returns once the poller sleeps, with
// the wait's gate and result.
func sleepingPoller(t *testing.T) (*testenv.Gate, <-chan error) {
	pollSleepFor.Store(int64(time.Hour))
	t.Cleanup(func() { pollSleepFor.Store(0) })
	g := testenv.NewGate(t)
	s := testenv.NewStream(t)
	g.Hold(t, s)
	res := testenv.WaitAsync(func() error { return Policy{Mode: Polling}.Stream(context.Background(), 0, s) })
	t.Cleanup(g.Open)
	wakePollerAtCleanup(t)
	testenv.Eventually(t, "the polled wait asleep on the poller", func() bool {
		return ReadStats().PolledWaits == 1 && pollerSleeping()
	})
	return g, res
}

// A wait that joins the shared poller without spinning of its own (every
// spin slot taken) while the poller sleeps kicks it: the poller queries
// at once and goes on querying through the wait's spinning budget, so
// the wait returns when its work ends, not after the poller's sleep; once
// it has returned, the rest of its budget does not keep the poller from
// sleeping. The sleeps here last an hour: without the kick, the wait
// would not return within the test's bound.
func TestAWaitJoiningThePollerWakesItsSleep(t *testing.T) {
	testenv.OnPrimary(t, 0)
	ga, polled := sleepingPoller(t)
	defer HoldSpinSlots()()

	gb := testenv.NewGate(t)
	s := testenv.NewStream(t)
	gb.Hold(t, s)
	t.Cleanup(ga.Open) // before gb's cleanup: freeing its word waits for the held streams
	wakePollerAtCleanup(t)
	kicks := pollerKicks.Load()
	// A spinning budget of a minute: the poller queries back to back until
	// the simulator has seen the gate open, however loaded the machine.
	fresh := testenv.WaitAsync(func() error { return Policy{Spin: time.Minute}.Stream(context.Background(), 0, s) })
	testenv.Eventually(t, "the second wait on the poller", func() bool { return ReadStats().PolledWaits == 2 })
	gb.Open()
	if err := testenv.Recv(t, fresh, "the wait that joined the sleeping poller"); err != nil {
		t.Fatalf("the wait that joined the sleeping poller: %v", err)
	}
	if n := pollerKicks.Load() - kicks; n != 1 {
		t.Errorf("%d kicks of the poller by the joining wait; want 1", n)
	}
	// The joining wait has ended: its budget (a minute) keeps the poller
	// querying no more, and it sleeps again for the polled wait.
	testenv.Eventually(t, "the poller asleep again once the joining wait ended", pollerSleeping)
	pollSleepFor.Store(0)
	shared.wake.kick()
	ga.Open()
	if err := testenv.Recv(t, polled, "the polled wait"); err != nil {
		t.Fatalf("the polled wait: %v", err)
	}
	testenv.Eventually(t, "the poller to end", func() bool { return !PollerRunning() })
}

// wakePollerAtCleanup ends the poller's hour-long sleeps when the test
// ends, before the cleanups registered earlier: whatever failed, the
// waits then end.
func wakePollerAtCleanup(t *testing.T) {
	t.Cleanup(func() {
		pollSleepFor.Store(0)
		shared.wake.kick()
	})
}
