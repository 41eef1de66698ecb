package cuda_test

import (
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
)

// One allocation of bytes carved into typed views, as a backend's arena
// does: the float32 and int32 parts are Slices of their own types, with
// the arena's lifetime and ordering.
func ExampleViewAt() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	arena, err := cuda.Alloc[byte](s, 1024)
	if err != nil {
		log.Fatal(err)
	}
	defer arena.Free()
	weights, err := cuda.ViewAt[float32](arena, 0, 4)
	if err != nil {
		log.Fatal(err)
	}
	counts, err := cuda.ViewAt[int32](arena, 256, 2)
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, weights, []float32{0.5, 1.5, 2.5, 3.5}); err != nil {
		log.Fatal(err)
	}
	if err := cuda.Memset(s, counts, 7); err != nil {
		log.Fatal(err)
	}
	w, c := make([]float32, 4), make([]int32, 2)
	if err := cuda.CopyToHost(s, w, weights); err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, c, counts); err != nil {
		log.Fatal(err)
	}
	_, err = cuda.ViewAt[float32](arena, 2, 1)
	fmt.Println(w, c, err != nil)
	// Output: [0.5 1.5 2.5 3.5] [7 7] true
}

// A temporary buffer allocated and freed inside a capture lives in the
// graph: each launch allocates it, uses it and frees it, at the same
// address.
func ExampleAlloc_inCapture() {
	ctx, s := exampleStream()
	defer ctx.Close()
	defer s.Close()
	out, err := cuda.Alloc[int32](s, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Free()
	g, err := s.Capture(func(s *cuda.Stream) error {
		tmp, err := cuda.Alloc[int32](s, 4)
		if err != nil {
			return err
		}
		if err := cuda.Memset(s, tmp, 3); err != nil {
			return err
		}
		if err := cuda.Copy(s, out, tmp); err != nil {
			return err
		}
		return tmp.Free()
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Destroy()
	x, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer x.Destroy()
	for range 3 {
		if err := s.LaunchGraph(x); err != nil {
			log.Fatal(err)
		}
	}
	got := make([]int32, 4)
	if err := cuda.CopyToHost(s, got, out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [3 3 3 3]
}
