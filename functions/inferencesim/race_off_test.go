//go:build !race

package inferencesim

const raceEnabled = false
