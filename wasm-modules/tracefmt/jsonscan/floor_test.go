package jsonscan_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lensfn/lensfn/tests/tracefixture"
)

// The floor benchmarks measure what the Go toolchain's wasm code costs against native code
// for the two simplest loops a scanner is made of, on the real Mooncake trace. Run them
// natively and as a wasip1 test binary (GOOS=wasip1 GOARCH=wasm GOWASIRUNTIME=wazero, see
// BENCHMARKS.md): no scanner can have a smaller native-to-guest ratio than these loops.

func floorInput(b *testing.B) []byte {
	data := floorTrace(b)
	b.SetBytes(int64(len(data)))
	return data
}

// floorTrace is the real trace, or, without it, a generated one of its size (the benchmark
// says so in one line rather than skipping).
func floorTrace(b *testing.B) []byte {
	dir, err := tracefixture.TracesDir("../../..")
	if err == nil {
		var data []byte
		if data, err = os.ReadFile(filepath.Join(dir, "mooncake", "conversation_trace.jsonl")); err == nil {
			return data
		}
	}
	b.Logf("real trace not available (%v): measuring a generated trace of 12,031 requests", err)
	return tracefixture.MooncakeJSONL(tracefixture.Mooncake(12031, 3536999, 1))
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
