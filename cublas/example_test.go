package cublas_test

import (
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cublas"
	"github.com/purecuda/purecuda/cuda"
)

// Multiply two row-major matrices with a handle bound to a stream.
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
	h, err := cublas.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	put := func(v []float32) cuda.Slice[float32] {
		x, err := cuda.Alloc[float32](s, len(v))
		if err == nil {
			err = cuda.CopyToDevice(s, x, v)
		}
		if err != nil {
			log.Fatal(err)
		}
		return x
	}
	a := put([]float32{1, 2, 3, 4, 5, 6}) // 2x3: [1 2 3] [4 5 6]
	b := put([]float32{1, 0, 0, 1, 1, 1}) // 3x2: [1 0] [0 1] [1 1]
	c := put(make([]float32, 4))
	defer a.Free()
	defer b.Free()
	defer c.Free()
	// C = A*B, row-major, leading dimensions the numbers of columns.
	if err := cublas.GemmRowMajor(h, cublas.NoTrans, cublas.NoTrans, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 4)
	if err := cuda.CopyToHost(s, out, c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [4 5 10 11]
}

// A batch of row-major products sharing one weight matrix (stride 0 for
// W): Y[i] = X[i]*W for two 1x2 inputs, float32 in and out with float32
// arithmetic.
func ExampleGemmStridedBatchedExRowMajor() {
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
	h, err := cublas.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	put := func(v []float32) cuda.Slice[float32] {
		x, err := cuda.Alloc[float32](s, len(v))
		if err == nil {
			err = cuda.CopyToDevice(s, x, v)
		}
		if err != nil {
			log.Fatal(err)
		}
		return x
	}
	x := put([]float32{1, 2, 3, 4}) // X[0] = [1 2], X[1] = [3 4]
	w := put([]float32{0, 1, 1, 0}) // W swaps the two columns
	y := put(make([]float32, 4))
	defer x.Free()
	defer w.Free()
	defer y.Free()
	err = cublas.GemmStridedBatchedExRowMajor(h, cublas.NoTrans, cublas.NoTrans, 1, 2, 2, 1, x, 2, 2, w, 2, 0, 0, y, 2, 2, 2,
		cublas.CUBLAS_COMPUTE_32F)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 4)
	if err := cuda.CopyToHost(s, out, y); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [2 1 4 3]
}
