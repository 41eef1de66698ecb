package libcuda

//go:generate go run ../tools/gen -lib libcuda
