//go:build race && !gpu

package graph_test

// raceDetector is true in a build with the race detector, which makes
// sync.Pool drop some of what it is given.
const raceDetector = true
