//go:build !linux

// Command bench runs purecuda's benchmarks beside a C baseline; it runs on
// Linux only (the baseline is built with cc and dlopen).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: runs on Linux only")
	os.Exit(1)
}
