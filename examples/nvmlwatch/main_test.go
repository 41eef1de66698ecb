//go:build !gpu

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purecuda/purecuda/internal/testenv/nvmlsim"
	"github.com/purecuda/purecuda/nvml"
)

func TestMain(m *testing.M) { nvmlsim.Main(m.Run) }

// syncBuffer is a bytes.Buffer that the program and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSummaryHasOneLinePerDevice(t *testing.T) {
	var out syncBuffer
	if err := run(context.Background(), &out, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+nvmlsim.Devices || lines[0] != "driver 580.0.sim, 2 devices" {
		t.Fatalf("output:\n%s", out.String())
	}
	want := regexp.MustCompile(`^0  NVIDIA H200 \(simulated\)  GPU-5e1a7ed0-4820-4c0d-9a3b-112233445500  00000000:19:00\.0  \d+/147456 MiB  31°C  75\.0W  SM 345MHz  P0  MIG off  \d+ processes$`)
	if !want.MatchString(lines[1]) {
		t.Errorf("device 0's line %q", lines[1])
	}
	if !strings.Contains(lines[2], "MIG on") {
		t.Errorf("device 1's line %q does not say MIG on", lines[2])
	}
}

func TestWatchPrintsEventsUntilInterrupted(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sets := nvmlsim.Stat("sets")
	done := make(chan error, 1)
	go func() { done <- run(ctx, &out, true) }()
	deadline := time.Now().Add(20 * time.Second)
	for nvmlsim.Stat("sets") == sets {
		if time.Now().After(deadline) {
			t.Fatalf("no event set registered; output:\n%s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	nvmlsim.PostEvent(1, nvml.NvmlEventTypeXidCriticalError, 79)
	for !strings.Contains(out.String(), "device 1  XidCriticalError  data 79") {
		if time.Now().After(deadline) {
			t.Fatalf("the event was not printed; output:\n%s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after the interrupt")
	}
	if !strings.Contains(out.String(), "watching SingleBitEccError|DoubleBitEccError|PState|XidCriticalError|Clock") {
		t.Errorf("output:\n%s", out.String())
	}
	if n := nvmlsim.Stat("sets"); n != sets {
		t.Errorf("%d event sets left", n)
	}
}
