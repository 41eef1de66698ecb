//go:build gpu

package cublaslt

// layoutRequired makes TestLayoutMatchesC fail, not skip, without a C
// compiler or the headers: the GPU host has both.
const layoutRequired = true
