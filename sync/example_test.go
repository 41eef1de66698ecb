package sync_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// Wait for a stream with a deadline; the GPU work is left alone when the
// deadline passes.
func ExampleStream() {
	var s libcuda.Stream // work was submitted to s
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	switch err := sync.Stream(ctx, 0, s); {
	case errors.Is(err, context.DeadlineExceeded):
		log.Print("still running")
	case errors.Is(err, sync.ErrCapturing):
		log.Print("the stream is being captured into a graph")
	case err != nil:
		log.Fatal(err)
	}
}

// A Policy chooses how to wait: here, never block a thread.
func ExamplePolicy() {
	var e libcuda.Event // recorded earlier
	polling := sync.Policy{Mode: sync.Polling, MaxSleep: 200 * time.Microsecond}
	if err := polling.Event(context.Background(), e); err != nil {
		log.Fatal(err)
	}
}
