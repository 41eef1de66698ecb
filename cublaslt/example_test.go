package cublaslt_test

import (
	"fmt"
	"log"

	"github.com/purecuda/purecuda/cublaslt"
	"github.com/purecuda/purecuda/cuda"
)

// A matrix product with a bias and ReLU applied by cuBLASLt: D =
// relu(A*B + bias), column-major, 2x2 = (2x3)(3x2).
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
	lt, err := cublaslt.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer lt.Close()
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
	a := put([]float32{1, -1, 2, -2, 3, -3}) // columns (1,-1) (2,-2) (3,-3)
	b := put([]float32{1, 1, 1, 0, 0, 1})    // columns (1,1,1) (0,0,1)
	bias := put([]float32{0.5, 10})
	d := put(make([]float32, 4))
	defer a.Free()
	defer b.Free()
	defer bias.Free()
	defer d.Free()
	op := cublaslt.Op{M: 2, N: 2, K: 3, Epilogue: cublaslt.CUBLASLT_EPILOGUE_RELU_BIAS}
	if err := cublaslt.Matmul(lt, op, 1, a, b, 0, cuda.Slice[float32]{}, d, bias); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 4)
	if err := cuda.CopyToHost(s, out, d); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [6.5 4 3.5 7]
}

// A batch of two row-major products sharing one weight matrix (StrideB
// 0), with a bias: the shape of a linear layer over a batch of inputs.
func ExampleMatmulEx() {
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
	lt, err := cublaslt.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer lt.Close()
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	x, err := cuda.Alloc[float32](s, 4) // two 1x2 rows, one per product
	must(err)
	defer x.Free()
	must(cuda.CopyToDevice(s, x, []float32{1, 2, 3, -4}))
	w, err := cuda.Alloc[float32](s, 4) // one 2x2 weight matrix, row-major
	must(err)
	defer w.Free()
	must(cuda.CopyToDevice(s, w, []float32{1, 0, 0, 1}))
	y, err := cuda.Alloc[float32](s, 4)
	must(err)
	defer y.Free()
	// Row-major, two products, W shared (stride 0). cuBLAS 13.1 on an
	// H100 refused the bias epilogue in row-major order (NOT_SUPPORTED).
	op := cublaslt.Op{M: 1, N: 2, K: 2, RowMajor: true, Batch: 2, StrideA: 2, StrideB: 0, StrideC: 2}
	must(cublaslt.MatmulEx(lt, op, 1, x, w, 0, cuda.Slice[float32]{}, y, cublaslt.Extra[float32, float32]{}))
	out := make([]float32, 4)
	must(cuda.CopyToHost(s, out, y))
	fmt.Println("x*W:", out)
	// Output: x*W: [1 2 3 -4]
}
