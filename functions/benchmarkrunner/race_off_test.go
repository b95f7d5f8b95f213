//go:build !race

package benchmarkrunner_test

// slack widens timing bounds under the race detector, which slows every goroutine several times.
const slack = 1
