//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"

	bench "github.com/purecuda/purecuda/internal/benchrows"
)

// The NCCL rows (package nccl against C calling ncclAllReduce, paired, on
// one GPU): where libnccl.so.2 is found (see nccl.Load; .ci/gpu-batch
// points PURECUDA_LIBNCCL at pip's nvidia/nccl/lib).
func init() {
	extraRows = append(extraRows, func(f *bench.Fixture) []bench.Row {
		cc := "cc"
		if fl := flag.Lookup("cc"); fl != nil {
			cc = fl.Value.String()
		}
		c, done, err := bench.LoadNCCLC(cc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "no NCCL rows: %v\n", err)
			return nil
		}
		done()
		return f.NCCLRows(c)
	})
}
