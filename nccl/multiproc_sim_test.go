//go:build linux && !gpu

package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/rendezvous"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// envChild names, in a rank that launchRanks started, the test it runs.
const envChild = "PURECUDA_NCCL_TEST_RANK"

// launchRanks runs the calling test in np processes of the test binary,
// with torchrun's environment for a job of np ranks on this host
// (rendezvous.Launch, as examples/allreduce does); it reports whether the
// caller is one of them. The parent gets every rank's output and the
// launch's error.
func launchRanks(t *testing.T, np int) (rank bool, out string, err error) {
	t.Helper()
	if os.Getenv(envChild) == t.Name() {
		return true, "", nil
	}
	var buf strings.Builder
	w := &lockedWriter{b: &buf}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.ChildTimeout)
	defer cancel()
	l := rendezvous.Launcher{NP: np, Argv: []string{os.Args[0], "-test.run=^" + t.Name() + "$", "-test.v"},
		Env: append(os.Environ(), envChild+"="+t.Name()), Stdout: w, Stderr: w, Grace: testenv.Timeout}
	err = l.Run(ctx)
	return false, buf.String(), err
}

// Two to four processes join one communicator through FromEnv on the
// loopback address, each on its own simulated device, and all-reduce,
// all-gather and send around a ring; every rank checks its results
// element by element.
func TestRanksInSeveralProcesses(t *testing.T) {
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprint(np), func(t *testing.T) {
			child, out, err := launchRanks(t, np)
			if child {
				rankBody(t)
				return
			}
			if err != nil {
				t.Fatalf("the ranks failed: %v\n%s", err, out)
			}
			if n := strings.Count(out, "--- PASS: "+t.Name()); n != np {
				t.Fatalf("%d ranks passed, want %d:\n%s", n, np, out)
			}
		})
	}
}

// rankBody is one rank's part of TestRanksInSeveralProcesses.
func rankBody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	c, err := nccl.FromEnv(ctx)
	testenv.Must(t, err)
	defer func() { testenv.Must(t, c.Close()) }()
	rank, size := c.Rank(), c.Size()
	cctx, err := c.Device().Context()
	testenv.Must(t, err)
	defer cctx.Close()
	s, err := cctx.NewStream()
	testenv.Must(t, err)
	defer s.Close()
	r := rank_(t, c, s)
	x := upload(t, r, []int64{int64(rank), 10, int64(rank * rank)})
	sum := upload(t, r, make([]int64, 3))
	all := upload(t, r, make([]int64, 3*size))
	got := upload(t, r, make([]int64, 3))
	testenv.Must(t, nccl.AllReduce(c, s, x, sum, nccl.Sum))
	testenv.Must(t, nccl.AllGather(c, s, x, all))
	testenv.Must(t, nccl.Group(func() error {
		if err := nccl.Send(c, s, x, (rank+1)%size); err != nil {
			return err
		}
		return nccl.Recv(c, s, got, (rank+size-1)%size)
	}))
	testenv.Must(t, c.Sync(ctx, s))
	want := []int64{0, int64(10 * size), 0}
	for q := range size {
		want[0] += int64(q)
		want[2] += int64(q * q)
	}
	checkEqual(t, "AllReduce", download(t, r, sum), want)
	var wantAll []int64
	for q := range size {
		wantAll = append(wantAll, int64(q), 10, int64(q*q))
	}
	checkEqual(t, "AllGather", download(t, r, all), wantAll)
	p := (rank + size - 1) % size
	checkEqual(t, "Recv", download(t, r, got), []int64{int64(p), 10, int64(p * p)})
}

// rank_ wraps a Comm and a stream as the helpers take them.
func rank_(_ *testing.T, c *nccl.Comm, s *cuda.Stream) rank { return rank{c: c, s: s} }

// A rank that exits in the middle of a job makes the others' all-reduce
// fail: their Sync returns an error well within its deadline, and they
// exit cleanly; only the dead rank fails the launch.
func TestARankThatExitsFailsTheOthers(t *testing.T) {
	const np, dead = 3, 1
	child, out, err := launchRanks(t, np)
	if child {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
		defer cancel()
		c, err := nccl.FromEnv(ctx)
		testenv.Must(t, err)
		if c.Rank() == dead {
			os.Exit(3) // gone, without Close or Abort
		}
		cctx, err := c.Device().Context()
		testenv.Must(t, err)
		defer cctx.Close()
		s, err := cctx.NewStream()
		testenv.Must(t, err)
		defer s.Close()
		buf := upload(t, rank{c: c, s: s}, []float32{1, 2})
		testenv.Must(t, nccl.AllReduceInPlace(c, s, buf, nccl.Sum))
		start := time.Now()
		err = c.Sync(ctx, s)
		if !errors.Is(err, nccl.RemoteError) {
			t.Fatalf("Sync: %v, want ncclRemoteError", err)
		}
		t.Logf("rank %d: Sync failed after %v: %v", c.Rank(), time.Since(start).Round(time.Millisecond), err)
		if err := c.Close(); !errors.Is(err, nccl.ErrAborted) {
			t.Errorf("Close after the failure: %v", err)
		}
		return
	}
	var le *rendezvous.LaunchError
	if !errors.As(err, &le) || len(le.Ranks) != 1 || le.Ranks[0].Rank != dead {
		t.Fatalf("the launch: %v, want rank %d alone to fail\n%s", err, dead, out)
	}
	if n := strings.Count(out, "--- PASS: "+t.Name()); n != np-1 {
		t.Fatalf("%d ranks passed, want %d:\n%s", n, np-1, out)
	}
}

// waitGroup waits for wg, or fails t after testenv.Timeout.
func waitGroup(t *testing.T, wg *gosync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	testenv.Recv(t, done, what)
}

// lockedWriter serializes the writes of several goroutines to b.
type lockedWriter struct {
	mu gosync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
