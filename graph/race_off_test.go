//go:build !race

package graph_test

const raceDetector = false
