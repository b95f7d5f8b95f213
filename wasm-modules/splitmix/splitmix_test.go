package splitmix

import "testing"

// TestReferenceValues: the first outputs for seed 1234567 from the reference implementation
// (Vigna, splitmix64.c), so every user of the package draws the published sequence.
func TestReferenceValues(t *testing.T) {
	r := New(1234567)
	for i, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821} {
		if got := r.Uint64(); got != want {
			t.Fatalf("value %d: %d, want %d", i, got, want)
		}
	}
	if a, b := New(7), Mix(7); func() uint64 { return a.Uint64() }() != b {
		t.Fatal("Mix(x) must equal New(x).Uint64()")
	}
}

func TestRanges(t *testing.T) {
	r := New(1)
	for range 10000 {
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatalf("Float64 %v outside [0, 1)", f)
		}
		if n := r.Intn(7); n < 0 || n >= 7 {
			t.Fatalf("Intn(7) = %d", n)
		}
	}
	if r.Intn(1) != 0 || r.Intn(0) != 0 {
		t.Fatal("Intn(n <= 1) must be 0")
	}
}
