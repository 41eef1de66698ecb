// Package harness is what every test binary of the module runs around its
// tests (testenv.Main and nvmlsim.Main call Run): a watchdog that ends a
// hung binary in minutes with every goroutine's stack, and a leak check
// after the tests that fails the binary when the C stand-ins still count a
// live object (a stream, an event, an allocation, a BLAS handle, an NVML
// event set, ...).
//
// A stand-in registers what it counts with Watch when it is loaded; a
// package whose tests leave something on purpose says so with Allow. The
// check does not force a garbage collection: a test closes what it makes,
// it does not leave it to a finalizer.
//
// It imports no package of the module, so that internal/testenv (which
// stands on libcuda) and internal/testenv/nvmlsim (which must not) share it.
package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	gosync "sync"
	"time"
)

// M is what Run runs: a *testing.M.
type M interface{ Run() int }

// EnvChild names, in a child process that testenv.InChild started, the test
// that the child is to run. Such a child is thrown away with whatever its
// test left (a fault test leaves a lost context on purpose): Run checks
// nothing there unless EnvLeakCheckChild is 1.
const EnvChild = "PURECUDA_TEST_CHILD"

// EnvLeakCheckChild, set to 1, makes a child process (EnvChild) check for
// leaks as a test binary does: for the test of the check itself.
const EnvLeakCheckChild = "PURECUDA_LEAKCHECK_CHILD"

// EnvWatchdog sets the watchdog's limit, a time.ParseDuration string
// ("90s", "20m"); "0" turns it off.
const EnvWatchdog = "PURECUDA_TEST_WATCHDOG"

// CheckWait is how long the leak check waits for the counts to fall to
// their baselines after passing tests: what a test closed may be released
// in the background (hostmem's unregisters, a Watcher's goroutine).
const CheckWait = 10 * time.Second

// EnvCheckWait sets CheckWait's value instead, a time.ParseDuration
// string: for the tests of the check, whose leaks are meant.
const EnvCheckWait = "PURECUDA_LEAKCHECK_WAIT"

// DrainTimeout bounds the drain that Run runs before the check.
const DrainTimeout = 30 * time.Second

type counter struct {
	what  string
	count func() (int64, error)
	allow int64
	why   string
}

var reg struct {
	mu       gosync.Mutex
	counters []*counter
}

func find(what string) *counter {
	for _, c := range reg.counters {
		if c.what == what {
			return c
		}
	}
	return nil
}

// Watch adds a count that must be back at 0 (or at most what Allow says)
// when the tests end; what names it in the failure, in the
// plural ("streams"). A second Watch of the same name replaces the first.
func Watch(what string, count func() (int64, error)) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c := find(what); c != nil {
		c.count = count
		return
	}
	reg.counters = append(reg.counters, &counter{what: what, count: count})
}

// Allow lets the package's tests leave up to n of what on purpose, for the
// reason why (which the check prints when the count is above n). It is
// meant for TestMain, for what a test cannot close (an object whose
// destruction the simulator was told to fail); it does not turn the check
// off: a count above n still fails. (Up to, not exactly n: a run of some
// of the tests, -run, leaves fewer.)
func Allow(what string, n int64, why string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	c := find(what)
	if c == nil {
		c = &counter{what: what}
		reg.counters = append(reg.counters, c)
	}
	c.allow, c.why = n, why
}

// Check compares every watched count with its baseline, polling for up to
// wait until none is above it, and returns an error naming each count that
// is, with its value; nil when none is.
func Check(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for d := time.Millisecond; ; d = min(2*d, 100*time.Millisecond) {
		bad := check()
		if len(bad) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leak check: after the tests %s", strings.Join(bad, ", "))
		}
		// What the tests closed may be released by a runtime cleanup, once
		// the collector finds it unreachable (package cuda destroys a
		// closed stream's last event so), and one cleanup may let go of
		// the next object: collect at each round.
		runtime.GC()
		time.Sleep(d)
	}
}

func check() []string {
	reg.mu.Lock()
	cs := slices.Clone(reg.counters)
	reg.mu.Unlock()
	var bad []string
	for _, c := range cs {
		if c.count == nil {
			continue // a baseline for what nothing counts here (the real driver, under -tags gpu)
		}
		n, err := c.count()
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", c.what, err))
		case n > c.allow && c.allow != 0:
			bad = append(bad, fmt.Sprintf("%d %s live, %d allowed (%s)", n, c.what, c.allow, c.why))
		case n > c.allow:
			bad = append(bad, fmt.Sprintf("%d %s live", n, c.what))
		case n < 0:
			bad = append(bad, fmt.Sprintf("%d %s live: a count below 0", n, c.what))
		}
	}
	return bad
}

// Run runs m's tests under the watchdog (see Watchdog), then, unless the
// binary only lists tests, fuzzes, or is a child process (EnvChild), runs
// drain (if not nil; bounded by DrainTimeout) and the leak check (Check).
// It returns the exit code: m's, or 1 when m's was 0 and the drain or the
// check failed (what failed goes to stderr). After failed tests the check
// still runs and reports.
func Run(m M, drain func(context.Context) error) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	stop := Watchdog(watchdogLimit())
	defer stop()
	code := m.Run()
	if !checked() {
		return code
	}
	var errs []string
	if drain != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
		if err := drain(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("drain after the tests: %v", err))
		}
		cancel()
	}
	wait := CheckWait
	if d, err := time.ParseDuration(os.Getenv(EnvCheckWait)); err == nil {
		wait = d
	}
	if err := Check(wait); err != nil {
		errs = append(errs, err.Error())
	}
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, e)
	}
	if len(errs) > 0 && code == 0 {
		code = 1
	}
	return code
}

// checked says whether this binary checks for leaks after its tests.
func checked() bool {
	if flagSet("test.list") || flagSet("test.fuzz") || flagSet("test.fuzzworker") {
		return false
	}
	return os.Getenv(EnvChild) == "" || os.Getenv(EnvLeakCheckChild) == "1"
}

// flagSet says whether the testing flag name has a value other than its
// zero ("", false).
func flagSet(name string) bool {
	f := flag.Lookup(name)
	if f == nil {
		return false
	}
	v := f.Value.String()
	return v != "" && v != "false"
}

// watchdogLimit is the watchdog's limit: EnvWatchdog's, else
// DefaultWatchdog; none (0) while fuzzing or benchmarking (long on
// purpose), or when -test.timeout was given other than go test's default
// of 10m (the caller chose a limit, and go test's own enforces it).
func watchdogLimit() time.Duration {
	if s := os.Getenv(EnvWatchdog); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v; using %v\n", EnvWatchdog, s, err, DefaultWatchdog)
			return DefaultWatchdog
		}
		return d
	}
	if flagSet("test.fuzz") || flagSet("test.fuzzworker") || flagSet("test.bench") {
		return 0
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d != 0 && d != 10*time.Minute {
			return 0
		}
	}
	return DefaultWatchdog
}

// Watchdog ends the process after limit (none if limit ≤ 0) unless stop
// is called first: it writes every goroutine's stack to stderr, and exits
// with status 2, so that a hung test binary costs minutes and says where
// it hung.
func Watchdog(limit time.Duration) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	timer := time.AfterFunc(limit, func() {
		fmt.Fprintf(os.Stderr, "\nwatchdog: the test binary still runs after %v (%s sets the limit); every goroutine:\n\n%s\n",
			limit, EnvWatchdog, AllStacks())
		os.Exit(2)
	})
	return func() { timer.Stop() }
}

// AllStacks returns the stacks of every goroutine, as a panic prints them.
func AllStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
