//go:build !race && !gpu

package graph_test

const raceDetector = false
