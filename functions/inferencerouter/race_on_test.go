//go:build race

package inferencerouter

// raceEnabled: the race detector allocates and sync.Pool drops items at random, so allocation counts mean nothing.
const raceEnabled = true
