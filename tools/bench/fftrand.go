//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"

	bench "github.com/purecuda/purecuda/internal/benchrows"
)

// The cuFFT and cuRAND rows (packages cufft and curand against C calling
// the same functions, paired): where libcufft.so.12 and libcurand.so.10
// are found (see cufft.Load and curand.Load; PURECUDA_LIBCUFFT and
// PURECUDA_LIBCURAND point at pip's nvidia/cu13/lib).
func init() {
	extraRows = append(extraRows, func(f *bench.Fixture) []bench.Row {
		cc := "cc"
		if fl := flag.Lookup("cc"); fl != nil {
			cc = fl.Value.String()
		}
		c, done, err := bench.LoadFFTRandC(cc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "no cuFFT/cuRAND rows: %v\n", err)
			return nil
		}
		done()
		return f.FFTRandRows(c)
	})
}
