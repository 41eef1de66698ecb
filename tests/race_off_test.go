//go:build !race

package tests

const raceDetector = false
