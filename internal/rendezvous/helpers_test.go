package rendezvous

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/harness"
)

// testToken is the job token of the tests.
const testToken = "0123456789abcdef0123456789abcdef"

// waitLimit bounds every wait of a test that is not itself a context's
// deadline under test.
const waitLimit = 10 * time.Second

// quiet is the logger of the tests that do not read rank 0's log.
var quiet = slog.New(slog.DiscardHandler)

// freeAddr returns host:port of a port that nothing listens on now.
func freeAddr(t testing.TB, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// world makes the Configs of a job of n ranks at addr.
func world(n int, addr string) []Config {
	cfgs := make([]Config, n)
	for r := range cfgs {
		cfgs[r] = Config{Rank: r, WorldSize: n, LocalRank: r, Addr: addr, Token: testToken, Log: quiet}
	}
	return cfgs
}

type result struct {
	data []byte
	err  error
}

// start runs Exchange for cfg on a goroutine; its result comes on the
// channel.
func start(ctx context.Context, cfg Config, payload []byte) <-chan result {
	ch := make(chan result, 1)
	go func() {
		data, err := Exchange(ctx, cfg, func() ([]byte, error) { return payload, nil })
		ch <- result{data, err}
	}()
	return ch
}

// get receives a result or fails the test with every goroutine's stack
// after waitLimit.
func get(t testing.TB, ch <-chan result, what string) result {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-timer.C:
		t.Fatalf("gave up after %v waiting for %s\n%s", waitLimit, what, stacks())
		panic("unreachable")
	}
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// noLeak fails the test, at its end, if goroutines started during it are
// still there a bounded while after (goroutines that already returned
// their results may take a moment to be gone).
func noLeak(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitLimit)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines at the start of the test, %d after it:\n%s", base, runtime.NumGoroutine(), stacks())
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// testCtx is a context with a deadline of a few seconds.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// logBuffer collects a logger's output; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	b := new(logBuffer)
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// setHook sets a test hook for the test's duration.
func setHook[F any](t *testing.T, hook *F, f F) {
	*hook = f
	t.Cleanup(func() {
		var zero F
		*hook = zero
	})
}

// The test binary is also the program Launch runs in the launch tests:
// with envChild set, it is a rank (see child) instead of the tests.
const envChild = "RENDEZVOUS_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(harness.Run(m, nil)) // under the watchdog
}

// child is one rank of a launch test:
//
//	exchange  Exchange with the environment's Config, print the payload
//	fail      rank 1 exits with status 3 at once, the others Exchange
//	fail-alone  rank 1 exits with status 3, the others with 0, at once
//	hang      sleep until killed
func child(mode string) int {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch mode {
	case "hang":
		fmt.Println("waiting")
		time.Sleep(time.Hour)
		return 0
	case "fail":
		if cfg.Rank == 1 {
			fmt.Fprintln(os.Stderr, "rank 1 fails on purpose")
			return 3
		}
	case "fail-alone":
		if cfg.Rank == 1 {
			return 3
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	data, err := Exchange(ctx, cfg, func() ([]byte, error) {
		return []byte("id of the job on port " + cfg.Addr[strings.LastIndexByte(cfg.Addr, ':')+1:]), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("rank %d of %d (local %d of %s) has %q\n", cfg.Rank, cfg.WorldSize, cfg.LocalRank, os.Getenv("LOCAL_WORLD_SIZE"), data)
	return 0
}
