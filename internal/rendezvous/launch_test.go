package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// launch runs the test binary as np ranks in mode (see child) and returns
// its error and the ranks' standard output and error.
func launch(t *testing.T, ctx context.Context, np int, mode string, grace time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut logBuffer
	l := Launcher{
		NP:   np,
		Argv: []string{os.Args[0]},
		// Stale rendezvous variables in the environment are replaced.
		Env:    append(os.Environ(), envChild+"="+mode, "RANK=7", "WORLD_SIZE=9", "MASTER_PORT=1", "LOCAL_WORLD_SIZE=9"),
		Stdout: &out, Stderr: &errOut,
		Grace: grace,
	}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	timer := time.NewTimer(3 * waitLimit)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		t.Fatalf("Launch did not return:\n%s", stacks())
	}
	return out.String(), errOut.String(), err
}

// Ranks in processes of their own, started by Launch, meet through the
// environment it gives them and all get rank 0's payload.
func TestLaunchExchange(t *testing.T) {
	for np := 2; np <= 4; np++ {
		t.Run(fmt.Sprint(np), func(t *testing.T) {
			noLeak(t)
			ctx := testCtx(t, 3*waitLimit)
			out, errOut, err := launch(t, ctx, np, "exchange", 0)
			if err != nil {
				t.Fatalf("Launch: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
			var payload string
			for r := range np {
				prefix := fmt.Sprintf("[rank %d] rank %d of %d (local %d of %d) has ", r, r, np, r, np)
				i := strings.Index(out, prefix)
				if i < 0 {
					t.Errorf("no line of rank %d in\n%s", r, out)
					continue
				}
				line, _, _ := strings.Cut(out[i+len(prefix):], "\n")
				if payload == "" {
					payload = line
				}
				if line != payload || !strings.Contains(line, "id of the job on port") {
					t.Errorf("rank %d has %s, rank 0's payload is %s", r, line, payload)
				}
			}
		})
	}
}

// A rank that fails is named with its status; the others, stuck waiting
// for it, are killed after the grace period and named as killed.
func TestLaunchFailingRank(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, 3*waitLimit)
	_, errOut, err := launch(t, ctx, 3, "fail", 50*time.Millisecond)
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Ranks) != 3 {
		t.Fatalf("Launch: %v; want a *LaunchError of 3 ranks\nstderr:\n%s", err, errOut)
	}
	for _, f := range le.Ranks {
		var ee *exec.ExitError
		if f.Rank == 1 {
			if f.Killed || !errors.As(f.Err, &ee) || ee.ExitCode() != 3 {
				t.Errorf("rank 1: %+v; want a failure of its own with status 3", f)
			}
			continue
		}
		if !f.Killed || !strings.Contains(f.Reason, "after rank 1 failed") {
			t.Errorf("rank %d: %+v; want killed after rank 1 failed", f.Rank, f)
		}
	}
	if msg := err.Error(); !strings.Contains(msg, "rank 1 failed: exit status 3") || !strings.Contains(msg, "rank 0 killed") {
		t.Errorf("the error %q does not name the ranks", msg)
	}
	if !strings.Contains(errOut, "[rank 1] rank 1 fails on purpose\n") {
		t.Errorf("rank 1's standard error was not forwarded with its prefix:\n%s", errOut)
	}
}

// Ranks that exit well are not named, even when another failed.
func TestLaunchOnlyFailedRanksNamed(t *testing.T) {
	noLeak(t)
	ctx := testCtx(t, 3*waitLimit)
	// A grace longer than the test: the others exit on their own.
	_, _, err := launch(t, ctx, 3, "fail-alone", time.Hour)
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Ranks) != 1 || le.Ranks[0].Rank != 1 || le.Ranks[0].Killed {
		t.Fatalf("Launch: %v; want rank 1's failure alone", err)
	}
	if out, _, err := launch(t, ctx, 1, "exchange", 0); err != nil || !strings.HasPrefix(out, "[rank 0] rank 0 of 1 (local 0 of 1) has ") {
		t.Errorf("Launch of one rank: %v, output %q", err, out)
	}
}

// The end of Launch's context kills every rank.
func TestLaunchContextEnd(t *testing.T) {
	noLeak(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var out logBuffer
	l := Launcher{NP: 2, Argv: []string{os.Args[0]}, Env: append(os.Environ(), envChild+"=hang"), Stdout: &out, Stderr: &out}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Both ranks print before they sleep: then cancel.
	deadline := time.Now().Add(waitLimit)
	for strings.Count(out.String(), "waiting") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the ranks did not start:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop := errors.New("stopped by the test")
	cancel(stop)
	var err error
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatalf("Launch did not return after its context ended:\n%s", stacks())
	}
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Ranks) != 2 {
		t.Fatalf("Launch: %v; want both ranks killed", err)
	}
	for _, f := range le.Ranks {
		if !f.Killed || !strings.Contains(f.Reason, "stopped by the test") {
			t.Errorf("rank %d: %+v; want killed because the context ended", f.Rank, f)
		}
	}
}

// A program that cannot start is named, with the rank.
func TestLaunchBadProgram(t *testing.T) {
	ctx := testCtx(t, waitLimit)
	err := Launch(ctx, 2, []string{"/nonexistent/program"}, nil)
	var le *LaunchError
	if !errors.As(err, &le) || len(le.Ranks) != 1 || le.Ranks[0].Rank != 0 || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Errorf("got %v; want rank 0 failing to start /nonexistent/program", err)
	}
	if err := Launch(ctx, 0, []string{os.Args[0]}, nil); err == nil {
		t.Error("Launch of 0 processes succeeded")
	}
	if err := Launch(ctx, 1, nil, nil); err == nil {
		t.Error("Launch of no program succeeded")
	}
}

// lineWriter writes whole lines, each with the prefix, and the last
// partial line on flush.
func TestLineWriter(t *testing.T) {
	var out logBuffer
	w := lineWriter{mu: new(sync.Mutex), dst: &out, prefix: "[rank 3] "}
	for _, s := range []string{"a", "b\nc", "\n\nd"} {
		w.Write([]byte(s))
	}
	w.flush()
	if got, want := out.String(), "[rank 3] ab\n[rank 3] c\n[rank 3] \n[rank 3] d\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
