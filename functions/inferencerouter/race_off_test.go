//go:build !race

package inferencerouter

const raceEnabled = false
