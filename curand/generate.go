package curand

//go:generate go run ../tools/gen -lib curand
