package hostmem_test

import (
	"context"
	"log"
	"time"

	"github.com/purecuda/purecuda/hostmem"
	"github.com/purecuda/purecuda/libcuda"
)

// Wrap a Go slice, copy from it on a stream, and free it at once: the
// memory is released in the background when the copy is done.
func ExampleWrap() {
	var ctx libcuda.Context   // e.g. a device's primary context
	var s libcuda.Stream      // a stream of ctx
	var dst libcuda.Deviceptr // device memory of 4 MiB
	data := make([]float32, 1<<20)

	buf, err := hostmem.Wrap(ctx, data)
	if err != nil {
		log.Fatal(err)
	}
	err = libcuda.WithContext(ctx, func() error {
		return libcuda.MemcpyHtoDAsync(dst, buf.Pointer(), uint64(buf.Size()), s)
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := buf.Use(s); err != nil { // the release waits for the copy
		log.Fatal(err)
	}
	if err := buf.Free(); err != nil { // returns at once
		log.Fatal(err)
	}
}

// Drain at the end of a program (or a test) waits for every release and
// unregisters what is left.
func ExampleDrain() {
	if err := hostmem.Drain(context.Background()); err != nil {
		log.Fatal(err)
	}
	st := hostmem.ReadStats()
	log.Printf("%d registrations left, %d kept after failures", st.Registrations, st.Kept)
}

// Wait in the middle of a program finishes the releases in progress but
// keeps their registrations retired, so wrapping the same memory again
// costs no new registration; Trim then unregisters them when a stall of
// the device does not matter.
func ExampleWait() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hostmem.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	st := hostmem.ReadStats()
	log.Printf("%d registrations retired (%d bytes)", st.Retired, st.RetiredBytes)
	if st.RetiredBytes > 1<<30 {
		hostmem.Trim()
	}
}
