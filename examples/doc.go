// Package examples holds, in its subdirectories, NVIDIA's classic CUDA
// samples written as Go programs with package cuda: vectoradd, matrixmul,
// simplestreams, asyncapi, simplezerocopy, simplecudagraphs and jacobi. Each
// program embeds its kernels (kernels.cu compiled to kernels.ptx), checks its
// result, prints the time of its measured part and exits non-zero when the
// check fails; baseline.c beside it does the same work through the driver
// API in C, for comparison. README.md has the results on an H200.
//
// This package itself has no API: its test checks the samples' sources
// (no unsafe, no libcuda, every kernel in the PTX).
package examples
