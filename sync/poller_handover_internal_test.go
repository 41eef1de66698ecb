package sync

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/libcuda"
)

// These tests drive the shared poller with targets of their own, whose
// queries answer as the test says, to count what the poller does between
// its queries.

// fakeTarget finishes when done says so; it counts its queries.
type fakeTarget struct {
	name    string
	done    func() bool
	queries atomic.Int64
}

func (f *fakeTarget) query(bool) error {
	f.queries.Add(1)
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
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return !shared.running && polledWaits.Load() == 0
	})
}

// The waits on a target that a round finds finished run before the
// poller's next query: the poller yields to them, and they run on its
// processor, instead of waiting for the round's end or for another
// thread to wake and take them. With one processor (GOMAXPROCS 1) a
// woken wait can only run when the poller yields; each records the
// poller's queries when it runs. (The runtime looks at its global queue,
// where the yielding poller goes, before the local one once in 61
// schedules, so a wait may see a query or two more; without the yields
// the first one would see all eight.)
func TestWaitsOfAFinishedTargetRunBeforeThePollersNextQuery(t *testing.T) {
	pollerIdle(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// However loaded the machine, every yield counts as quick.
	defer yieldSlow.Store(yieldSlow.Swap(int64(time.Hour)))
	const n = 8
	groups := map[target]*pollGroup{}
	var list []*pollGroup
	seen := make([]int64, n) // the poller's queries when wait i ran
	ran := make(chan int, n)
	for i := range n {
		ft := &fakeTarget{name: fmt.Sprint("target ", i), done: func() bool { return true }}
		w := &pollWait{done: make(chan error, 1), maxSleep: time.Millisecond}
		polledWaits.Add(1)
		g := &pollGroup{t: ft, waits: []*pollWait{w}}
		groups[ft] = g
		list = append(list, g)
		go func() {
			err := <-w.done
			seen[i] = pollerQueries.Load()
			if err != nil {
				t.Errorf("wait %d: %v", i, err)
			}
			ran <- i
		}()
	}
	runtime.Gosched() // the waits reach their receive
	q0 := pollerQueries.Load()
	left, progress, _, _ := round(list, groups)
	for range n {
		testenv.Recv(t, ran, "a wait woken by the round")
	}
	if len(left) != 0 || !progress || len(groups) != 0 {
		t.Fatalf("the round left %d groups (%d in the map), progress %v; want none and progress", len(left), len(groups), progress)
	}
	for i, q := range seen {
		if d := q - q0; d > int64(i)+3 {
			t.Errorf("wait %d ran after %d queries of the round; want at most %d (its own target's and those before it, and two more)", i, d, i+3)
		}
	}
}

// finishedRound files n waits, each on a target of its own that is
// finished, and returns the round's list and map, and a channel that
// receives each wait's index once it has returned.
func finishedRound(n int) ([]*pollGroup, map[target]*pollGroup, <-chan int) {
	groups := map[target]*pollGroup{}
	var list []*pollGroup
	ran := make(chan int, n)
	for i := range n {
		ft := &fakeTarget{name: fmt.Sprint("target ", i), done: func() bool { return true }}
		w := &pollWait{done: make(chan error, 1), maxSleep: time.Millisecond}
		polledWaits.Add(1)
		g := &pollGroup{t: ft, waits: []*pollWait{w}}
		groups[ft] = g
		list = append(list, g)
		go func() {
			<-w.done
			ran <- i
		}()
	}
	return list, groups, ran
}

// When a yield to the woken waits finds the processors busy (here one
// processor, and a goroutine that computes for four times yieldSlow at
// each turn), it
// is the round's last: the poller does not wait behind the busy
// goroutines once for each target it finds finished. Eight finished
// targets, one yield.
func TestASlowYieldIsTheRoundsLast(t *testing.T) {
	pollerIdle(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	hogged := make(chan struct{})
	go func() {
		defer close(hogged)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for end := mono() + 4*yieldSlow.Load(); mono() < end; {
			}
			runtime.Gosched()
		}
	}()
	defer func() { close(stop); <-hogged }()
	const n = 8
	list, groups, ran := finishedRound(n)
	runtime.Gosched() // the waits reach their receive; the busy goroutine takes its turn
	y0 := pollerYields.Load()
	if left, progress, _, _ := round(list, groups); len(left) != 0 || !progress {
		t.Fatalf("the round left %d groups, progress %v; want none and progress", len(left), progress)
	}
	if d := pollerYields.Load() - y0; d != 1 {
		t.Errorf("the round yielded %d times for %d finished targets beside a busy goroutine; want 1", d, n)
	}
	for range n {
		testenv.Recv(t, ran, "a wait woken by the round")
	}
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
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return shared.sleeping
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
// pollMinSleep up to pollMaxSleep, or half the round when that is longer
// (a round of a thousand queries does not run without pause: the poller
// queries at most two thirds of the time), and never past the smallest
// MaxSleep of its waits.
func TestThePollerSleepsUpToHalfItsRound(t *testing.T) {
	for _, c := range []struct {
		prev, busy, limit, want time.Duration
	}{
		{0, 8 * time.Microsecond, time.Millisecond, pollMinSleep},
		{pollMinSleep, 8 * time.Microsecond, time.Millisecond, 2 * pollMinSleep},
		{64 * time.Microsecond, 8 * time.Microsecond, time.Millisecond, pollMaxSleep},
		{pollMaxSleep, 8 * time.Microsecond, time.Millisecond, pollMaxSleep},
		{pollMaxSleep, time.Millisecond, time.Second, 2 * pollMaxSleep},
		{400 * time.Microsecond, time.Millisecond, time.Second, 500 * time.Microsecond},
		{400 * time.Microsecond, time.Millisecond, 300 * time.Microsecond, 300 * time.Microsecond},
		{pollMaxSleep, 8 * time.Microsecond, 50 * time.Microsecond, 50 * time.Microsecond},
	} {
		if got := nextSleep(c.prev, c.busy, c.limit); got != c.want {
			t.Errorf("nextSleep(%v, a round of %v, limit %v) = %v; want %v", c.prev, c.busy, c.limit, got, c.want)
		}
	}
}
