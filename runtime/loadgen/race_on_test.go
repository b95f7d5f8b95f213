//go:build race

package loadgen_test

// raceDetector: timing assertions are skipped under the race detector, whose slowdown makes
// them measure the detector.
const raceDetector = true
