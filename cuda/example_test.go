package cuda_test

import (
	"context"
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cuda"
	"github.com/purecuda/purecuda/internal/kernels"
)

// Example runs saxpy (y = a*x + y) on the first device.
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
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	mod, err := cuda.LoadModule(ctx, kernels.PTX)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	saxpy, err := mod.Func("saxpy")
	if err != nil {
		log.Fatal(err)
	}

	const n = 1000
	hx, hy := make([]float32, n), make([]float32, n)
	for i := range hx {
		hx[i], hy[i] = float32(i), 1
	}
	x, err := cuda.Alloc[float32](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	y, err := cuda.Alloc[float32](s, n)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	if err := cuda.CopyToDevice(s, x, hx); err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToDevice(s, y, hy); err != nil {
		log.Fatal(err)
	}
	err = s.Launch(saxpy, cuda.Grid((n+255)/256, 1, 1), cuda.Block(256, 1, 1),
		cuda.Int32(n), cuda.Float32(2), x.Arg(), y.Arg())
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CopyToHost(s, hy, y); err != nil { // into a []float32: waits
		log.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(hy[0], hy[1], hy[999])
	// Output: 1 3 1999
}
