//go:build linux

package nccl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/testenv"
	"github.com/purecuda/purecuda/nccl"
)

// rank is one rank of a communicator of this process: its Comm, a stream
// of its device's primary context.
type rank struct {
	c *nccl.Comm
	s *cuda.Stream
}

// initAll makes a communicator over the first n devices (InitAll) and a
// stream for each rank; everything is closed when the test ends.
func initAll(t *testing.T, n int) []rank {
	t.Helper()
	devs, err := cuda.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < n {
		t.Fatalf("%d devices, the test needs %d", len(devs), n)
	}
	comms, err := nccl.InitAll(devs[:n])
	if err != nil {
		t.Fatalf("InitAll: %v", err)
	}
	ranks := make([]rank, n)
	for i, c := range comms {
		ctx, err := devs[i].Context()
		if err != nil {
			t.Fatal(err)
		}
		s, err := ctx.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		ranks[i] = rank{c: c, s: s}
		t.Cleanup(func() {
			if err := c.Close(); err != nil && !errors.Is(err, nccl.ErrAborted) {
				t.Errorf("Close of rank %d: %v", i, err)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
			if err := ctx.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	return ranks
}

// syncAll waits for every rank's stream, bounded.
func syncAll(t *testing.T, ranks []rank) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	for i, r := range ranks {
		if err := r.c.Sync(ctx, r.s); err != nil {
			t.Fatalf("Sync of rank %d: %v", i, err)
		}
	}
}

// upload copies host to a new Slice on r's device.
func upload[T any](t *testing.T, r rank, host []T) cuda.Slice[T] {
	t.Helper()
	x, err := cuda.Alloc[T](r.s, len(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.Free(); err != nil {
			t.Error(err)
		}
	})
	if err := cuda.CopyToDevice(r.s, x, host); err != nil {
		t.Fatal(err)
	}
	return x
}

// download copies x to the host, after the stream's work.
func download[T any](t *testing.T, r rank, x cuda.Slice[T]) []T {
	t.Helper()
	out := make([]T, x.Len())
	if err := cuda.CopyToHost(r.s, out, x); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	if err := r.s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}
