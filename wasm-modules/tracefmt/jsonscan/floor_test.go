package jsonscan_test

import (
	"bytes"
	"os"
	"testing"
)

// The floor benchmarks measure what the Go toolchain's wasm code costs against native code
// for the two simplest loops a scanner is made of, on the real Mooncake trace. Run them
// natively and as a wasip1 test binary (GOOS=wasip1 GOARCH=wasm GOWASIRUNTIME=wazero, see
// BENCHMARKS.md): no scanner can have a smaller native-to-guest ratio than these loops.

func floorInput(b *testing.B) []byte {
	data, err := os.ReadFile("../../../../shared/traces/mooncake/conversation_trace.jsonl")
	if err != nil {
		b.Skipf("real trace not available: %v", err)
	}
	b.SetBytes(int64(len(data)))
	return data
}

var floorSink int64

//go:noinline
func countNewlines(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

//go:noinline
func accumulateDigits(b []byte) int64 {
	var v int64
	for _, c := range b {
		if d := c - '0'; d <= 9 {
			v = v*10 + int64(d)
		} else {
			v = 0
		}
	}
	return v
}

func BenchmarkFloorCountLoop(b *testing.B) {
	data := floorInput(b)
	for b.Loop() {
		floorSink += countNewlines(data)
	}
}

func BenchmarkFloorDigitLoop(b *testing.B) {
	data := floorInput(b)
	for b.Loop() {
		floorSink += accumulateDigits(data)
	}
}

// BenchmarkFloorBytesCount is the standard library's vectorised count natively and its
// portable byte loop in a guest.
func BenchmarkFloorBytesCount(b *testing.B) {
	data := floorInput(b)
	for b.Loop() {
		floorSink += int64(bytes.Count(data, []byte{'\n'}))
	}
}
