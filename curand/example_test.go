package curand_test

import (
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/curand"
)

// Normal numbers from Philox with a fixed seed: the same seed gives the
// same numbers, run after run.
func Example() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := devs[0].Context()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	s, err := ctx.NewStream(cuda.NonBlocking())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	draw := func() []float32 {
		g, err := curand.New(s, curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
		if err != nil {
			log.Fatal(err)
		}
		defer g.Close()
		if err := g.SetSeed(2026); err != nil {
			log.Fatal(err)
		}
		x, err := cuda.Alloc[float32](s, 1024)
		if err != nil {
			log.Fatal(err)
		}
		defer x.Free()
		if err := curand.Normal(g, x, 0, 1); err != nil {
			log.Fatal(err)
		}
		out := make([]float32, x.Len())
		if err := cuda.CopyToHost(s, out, x); err != nil {
			log.Fatal(err)
		}
		return out
	}
	a, b := draw(), draw()
	fmt.Println(len(a), fmt.Sprint(a) == fmt.Sprint(b))
	// Output: 1024 true
}
