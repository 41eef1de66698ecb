//go:build !race

package hostmem_test

const raceDetector = false
