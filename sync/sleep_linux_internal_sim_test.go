//go:build linux && !gpu

package sync

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/purecuda/purecuda/internal/testenv"
	"golang.org/x/sys/unix"
)

// threadSlack reads the timer slack of thread tid of this process (the
// task folders have no timerslack_ns; /proc/TID has).
func threadSlack(t *testing.T, tid int64) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", tid))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The poller sleeps on its thread with the timer slack at 1ns (so that a
// sleep of 100µs is not stretched by the default slack of 50µs, nor by
// the runtime's timers, which wait in whole milliseconds), and gives the
// thread back with its slack as it was.
func TestThePollerSleepsWithoutTimerSlack(t *testing.T) {
	testenv.OnPrimary(t, 0)
	before, err := unix.PrctlRetInt(prGetTimerSlack, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if before == 1 {
		t.Fatal("this thread's timer slack is 1ns already: the test could not tell the poller's setting")
	}
	g, res := sleepingPoller(t)
	wakePollerAtCleanup(t)
	// The poller says it sleeps a moment before its thread's slack is
	// set: wait for the setting (the sleep lasts an hour).
	var tid int64
	testenv.Eventually(t, "the sleeping poller's thread at a timer slack of 1ns", func() bool {
		tid = sleepingThread.Load()
		return threadSlack(t, tid) == 1
	})
	g.Open()
	pollSleepFor.Store(0)
	shared.wake.kick()
	if err := testenv.Recv(t, res, "the polled wait"); err != nil {
		t.Fatalf("the polled wait: %v", err)
	}
	testenv.Eventually(t, "the poller to end", func() bool { return !PollerRunning() })
	if n := threadSlack(t, tid); n != before {
		t.Errorf("the poller left its thread with a timer slack of %dns; it was %dns", n, before)
	}
}
