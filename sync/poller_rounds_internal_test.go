package sync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// These tests drive the shared poller with targets of their own, whose
// queries answer as the test says, to count its rounds and sleeps.

// fakeTarget finishes when done says so.
type fakeTarget struct {
	name string
	done func() bool
}

func (f *fakeTarget) query(bool) error {
	if f.done() {
		return nil
	}
	return libcuda.CUDA_ERROR_NOT_READY
}

func (f *fakeTarget) block() error   { return errors.New("fake target: no blocking wait") }
func (f *fakeTarget) String() string { return f.name }

// pollerIdle waits until no poller runs and no wait is polled.
func pollerIdle(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, "no poller running", func() bool {
		return !shared.running.Load() && polledWaits.Load() == 0
	})
}

// Once a round finds a target finished, the next round starts without a
// sleep, and so does each next one while rounds find targets finished:
// the poller's sleeps last an hour here, and three targets finish one
// round after another (each once the one before it has finished in an
// earlier round). A fourth target, which never finishes, keeps the
// poller going until the test cancels its wait.
func TestRoundsGoOnWithoutSleepWhileTheyFindTargetsFinished(t *testing.T) {
	pollerIdle(t)
	pollSleepFor.Store(int64(time.Hour))
	t.Cleanup(func() { pollSleepFor.Store(0); shared.wake.kick() })
	var finished [3]atomic.Int64 // the round in which target i finished, +1
	var sleepsAt [3]atomic.Int64 // the poller's sleeps then
	var targets [3]*fakeTarget
	for i := range targets {
		targets[i] = &fakeTarget{name: fmt.Sprint("chained target ", i), done: func() bool {
			if i > 0 {
				if r := finished[i-1].Load(); r == 0 || r-1 >= pollerRounds.Load() {
					return false // the one before has not finished in an earlier round
				}
			}
			if finished[i].Load() == 0 {
				finished[i].Store(pollerRounds.Load() + 1)
				sleepsAt[i].Store(pollerSleeps.Load())
			}
			return true
		}}
	}
	never := &fakeTarget{name: "held target", done: func() bool { return false }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := testenv.WaitAsync(func() error { return onPoller(ctx, never, shared.add(never, time.Millisecond, time.Time{})) })
	testenv.Eventually(t, "the poller asleep", func() bool {
		return shared.sleeping.Load()
	})
	// Added while it sleeps (an hour) without kicking it: the next round
	// comes when the test wakes it.
	var res [3]<-chan error
	for i, ft := range targets {
		res[i] = testenv.WaitAsync(func() error { return onPoller(context.Background(), ft, shared.add(ft, time.Millisecond, time.Time{})) })
	}
	testenv.Eventually(t, "the chained waits on the poller", func() bool { return polledWaits.Load() == 4 })
	shared.wake.kick()
	for i := range res {
		if err := testenv.Recv(t, res[i], fmt.Sprint("chained wait ", i)); err != nil {
			t.Fatalf("chained wait %d: %v", i, err)
		}
	}
	for i := 1; i < len(targets); i++ {
		if a, b := finished[i-1].Load(), finished[i].Load(); b != a+1 {
			t.Errorf("target %d finished in round %d, the one before it in round %d; want the next round", i, b-1, a-1)
		}
	}
	if a, b := sleepsAt[0].Load(), sleepsAt[2].Load(); a != b {
		t.Errorf("the poller slept %d times between the rounds that found targets finished; want none", b-a)
	}
	cancel()
	if err := testenv.Recv(t, held, "the held wait"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the held wait: %v, want context.Canceled", err)
	}
	pollSleepFor.Store(0)
	shared.wake.kick()
	pollerIdle(t)
}

// The poller's sleep after a round in which nothing finished doubles from
// pollMinSleep up to pollMaxSleep, or the round's length when that is
// longer (a round of a thousand queries does not run without pause: the
// poller queries at most half the time), and never past the smallest
// MaxSleep of its waits.
func TestThePollerSleepsUpToItsRound(t *testing.T) {
	for _, c := range []struct {
		prev, busy, limit, want time.Duration
	}{
		{0, 8 * time.Microsecond, time.Millisecond, pollMinSleep},
		{pollMinSleep, 8 * time.Microsecond, time.Millisecond, 2 * pollMinSleep},
		{64 * time.Microsecond, 8 * time.Microsecond, time.Millisecond, pollMaxSleep},
		{pollMaxSleep, 8 * time.Microsecond, time.Millisecond, pollMaxSleep},
		{pollMaxSleep, time.Millisecond, time.Second, 2 * pollMaxSleep},
		{400 * time.Microsecond, time.Millisecond, time.Second, 800 * time.Microsecond},
		{800 * time.Microsecond, time.Millisecond, time.Second, time.Millisecond},
		{400 * time.Microsecond, time.Millisecond, 300 * time.Microsecond, 300 * time.Microsecond},
		{pollMaxSleep, 8 * time.Microsecond, 50 * time.Microsecond, 50 * time.Microsecond},
	} {
		if got := nextSleep(c.prev, c.busy, c.limit); got != c.want {
			t.Errorf("nextSleep(%v, a round of %v, limit %v) = %v; want %v", c.prev, c.busy, c.limit, got, c.want)
		}
	}
}

// A round of wakerFrom targets or more leaves the wake-ups of the waits it
// finds finished to the waker, which wakes each of them once and ends
// when there is nothing left to wake; a round of fewer targets wakes its
// waits itself. The targets finish together, as one host write would
// finish a thousand held streams: each answers finished only in the
// poller's second round after the test opens them (the first may have
// begun before), which holds them all.
func TestTheWakerWakesTheWaitsOfLargeRounds(t *testing.T) {
	for _, n := range []int{wakerFrom - 1, wakerFrom, 3 * wakerFrom} {
		t.Run(fmt.Sprint(n, " targets"), func(t *testing.T) {
			pollerIdle(t)
			// Cancelled when the test ends: a failing test leaves no
			// wait behind on the poller.
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			var openedAt atomic.Int64 // the poller's round when the test opened the targets; 0 before
			finished := func() bool {
				o := openedAt.Load()
				return o != 0 && pollerRounds.Load() >= o+2
			}
			res := make([]<-chan error, n)
			for i := range res {
				ft := &fakeTarget{name: fmt.Sprint("target ", i), done: finished}
				res[i] = testenv.WaitAsync(func() error {
					return onPoller(ctx, ft, shared.add(ft, time.Millisecond, time.Time{}))
				})
			}
			testenv.Eventually(t, "the waits on the poller", func() bool { return polledWaits.Load() == int64(n) })
			w0 := wakerWakes.Load()
			openedAt.Store(max(pollerRounds.Load(), 1))
			for i := range res {
				if err := testenv.Recv(t, res[i], fmt.Sprint("wait ", i)); err != nil {
					t.Fatalf("wait %d: %v", i, err)
				}
			}
			want := int64(0)
			if n >= wakerFrom {
				want = int64(n)
			}
			if got := wakerWakes.Load() - w0; got != want {
				t.Errorf("the waker woke %d of the %d waits; want %d", got, n, want)
			}
			testenv.Eventually(t, "the waker to end", func() bool { return !wakerOn.Load() })
		})
	}
}
