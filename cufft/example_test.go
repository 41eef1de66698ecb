package cufft_test

import (
	"fmt"
	"log"
	"math"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/cufft"
)

// The spectrum of a cosine of frequency 3 over 16 points: two peaks of 8,
// at 3 and at -3 (13).
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
	const n = 16
	p, err := cufft.NewPlan(s, cufft.CUFFT_C2C, cufft.Shape{N: []int{n}})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	host := make([]complex64, n)
	for i := range host {
		host[i] = complex(float32(math.Cos(2*math.Pi*3*float64(i)/n)), 0)
	}
	x, err := cuda.Alloc[complex64](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	if err := cuda.CopyToDevice(s, x, host); err != nil {
		log.Fatal(err)
	}
	if err := p.C2C(x, x, cufft.Forward); err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, host, x); err != nil {
		log.Fatal(err)
	}
	for k, v := range host {
		if math.Abs(float64(real(v))) > 1e-3 {
			fmt.Printf("%d: %.1f\n", k, real(v))
		}
	}
	// Output:
	// 3: 8.0
	// 13: 8.0
}
