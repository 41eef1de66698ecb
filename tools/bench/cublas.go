//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"

	bench "github.com/purecuda/purecuda/internal/benchrows"
)

// The cuBLAS rows (package cublas against C calling the same cuBLAS
// functions, paired): where libcublas.so.13 is found (see cublas.Load;
// .ci/gpu-batch points PURECUDA_LIBCUBLAS at pip's nvidia/cu13/lib).
func init() {
	extraRows = append(extraRows, func(f *bench.Fixture) []bench.Row {
		cc := "cc"
		if fl := flag.Lookup("cc"); fl != nil {
			cc = fl.Value.String()
		}
		c, done, err := bench.LoadBLASC(cc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "no cuBLAS rows: %v\n", err)
			return nil
		}
		done() // the library stays loaded; its files can go
		return f.BLASRows(c)
	})
}
