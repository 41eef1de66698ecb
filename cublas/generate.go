package cublas

//go:generate go run ../tools/gen -lib cublas
