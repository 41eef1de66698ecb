//go:build !gpu

package cublaslt

const layoutRequired = false
