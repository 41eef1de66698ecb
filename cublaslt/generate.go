package cublaslt

//go:generate go run ../tools/gen -lib cublaslt
