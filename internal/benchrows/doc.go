// Package bench (internal/benchrows) holds the benchmark bodies that both `go test -bench` (in
// tests/) and the tools/bench command run, so the two measure the same code.
// It is built on Linux only, where the benchmarks run.
package bench
