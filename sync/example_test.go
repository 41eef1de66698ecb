package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/purecuda/purecuda/libcuda"
	"github.com/purecuda/purecuda/sync"
)

// The examples run in `go test` on the simulator, and under -tags gpu on
// the GPU, with the same output.

// primary retains device 0's primary context; release lets it go.
func primary() (cu libcuda.Context, release func()) {
	if err := libcuda.Init(0); err != nil {
		log.Fatal(err)
	}
	var dev libcuda.Device
	if err := errors.Join(libcuda.DeviceGet(&dev, 0), libcuda.DevicePrimaryCtxRetain(&cu, dev)); err != nil {
		log.Fatal(err)
	}
	return cu, func() {
		if err := libcuda.DevicePrimaryCtxRelease(dev); err != nil {
			log.Print(err)
		}
	}
}

// Wait for a stream with a deadline; the GPU work is left alone when the
// deadline passes. Here the stream waits for a word of host memory
// (cuStreamWaitValue32), so it is busy until the program writes it.
func ExampleStream() {
	cu, release := primary()
	defer release()
	err := libcuda.WithContext(cu, func() error {
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		defer func() {
			if err := libcuda.StreamDestroy(s); err != nil {
				log.Print(err)
			}
		}()
		var word unsafe.Pointer
		if err := libcuda.MemHostAlloc(&word, 4, uint32(libcuda.CU_MEMHOSTALLOC_DEVICEMAP)); err != nil {
			return err
		}
		defer func() {
			if err := libcuda.MemFreeHost(word); err != nil {
				log.Print(err)
			}
		}()
		atomic.StoreUint32((*uint32)(word), 0)
		var dword libcuda.Deviceptr
		if err := errors.Join(
			libcuda.MemHostGetDevicePointer(&dword, word, 0),
			libcuda.StreamWaitValue32(s, dword, 1, uint32(libcuda.CU_STREAM_WAIT_VALUE_GEQ))); err != nil {
			return err
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		err := sync.Stream(ctx, cu, s)
		fmt.Println("deadline passed:", errors.Is(err, context.DeadlineExceeded))

		atomic.StoreUint32((*uint32)(word), 1) // the stream goes on
		err = sync.Stream(context.Background(), cu, s)
		fmt.Println("after the write:", err)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// deadline passed: true
	// after the write: <nil>
}

// Wait for an event: the work recorded before it is done.
func ExampleEvent() {
	cu, release := primary()
	defer release()
	err := libcuda.WithContext(cu, func() error {
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		var e libcuda.Event
		if err := libcuda.EventCreate(&e, uint32(libcuda.CU_EVENT_DISABLE_TIMING)); err != nil {
			return errors.Join(err, libcuda.StreamDestroy(s))
		}
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4<<20); err != nil {
			return errors.Join(err, libcuda.EventDestroy(e), libcuda.StreamDestroy(s))
		}
		err := errors.Join(
			libcuda.MemsetD32Async(d, 7, 1<<20, s),
			libcuda.EventRecord(e, s),
			sync.Event(context.Background(), e))
		if err == nil {
			done, qerr := sync.EventDone(e)
			fmt.Println("event done:", done, qerr)
		}
		return errors.Join(err, libcuda.MemFree(d), libcuda.EventDestroy(e), libcuda.StreamDestroy(s))
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: event done: true <nil>
}

// Wait for all the work of a context, on every stream, like
// cuCtxSynchronize but without blocking the thread.
func ExampleContext() {
	cu, release := primary()
	defer release()
	const n = 1024
	got := make([]uint32, n)
	err := libcuda.WithContext(cu, func() error {
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, n*4); err != nil {
			return errors.Join(err, libcuda.StreamDestroy(s))
		}
		pinned := unsafe.Pointer(nil)
		if err := libcuda.MemHostAlloc(&pinned, n*4, 0); err != nil {
			return errors.Join(err, libcuda.MemFree(d), libcuda.StreamDestroy(s))
		}
		err := errors.Join(
			libcuda.MemsetD32Async(d, 3, n, s),
			libcuda.MemcpyDtoHAsync(pinned, d, n*4, s),
			sync.Context(context.Background(), cu))
		copy(got, unsafe.Slice((*uint32)(pinned), n))
		return errors.Join(err, libcuda.MemFreeHost(pinned), libcuda.MemFree(d), libcuda.StreamDestroy(s))
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got[0], got[n-1])
	// Output: 3 3
}

// A Policy chooses how to wait: here, never block a thread, and sleep at
// most 200µs between queries.
func ExamplePolicy() {
	cu, release := primary()
	defer release()
	polling := sync.Policy{Mode: sync.Polling, MaxSleep: 200 * time.Microsecond}
	err := libcuda.WithContext(cu, func() error {
		var s libcuda.Stream
		if err := libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING)); err != nil {
			return err
		}
		var d libcuda.Deviceptr
		if err := libcuda.MemAlloc(&d, 4<<20); err != nil {
			return errors.Join(err, libcuda.StreamDestroy(s))
		}
		err := errors.Join(
			libcuda.MemsetD32Async(d, 1, 1<<20, s),
			polling.Stream(context.Background(), cu, s))
		fmt.Println("stream idle:", libcuda.StreamQuery(s) == nil)
		return errors.Join(err, libcuda.MemFree(d), libcuda.StreamDestroy(s))
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: stream idle: true
}

// Query a stream from code that may run beside other goroutines'
// captures: in the thread's own capture mode while none is in progress, in
// relaxed mode while one is, with the stream's context current.
func ExampleCaptureSafeIn() {
	cu, release := primary()
	defer release()
	var s libcuda.Stream
	if err := libcuda.WithContext(cu, func() error {
		return libcuda.StreamCreate(&s, uint32(libcuda.CU_STREAM_NON_BLOCKING))
	}); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := libcuda.StreamDestroy(s); err != nil {
			log.Print(err)
		}
	}()
	err := sync.CaptureSafeIn(cu, func() error { return libcuda.StreamQuery(s) })
	fmt.Println("an idle stream's query:", err)
	// Output: an idle stream's query: <nil>
}
