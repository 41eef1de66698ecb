package cufft

//go:generate go run ../tools/gen -lib cufft
