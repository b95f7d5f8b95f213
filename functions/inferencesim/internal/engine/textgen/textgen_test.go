package textgen

import (
	"slices"
	"strings"
	"testing"
)

// TestTokenizer: the reference's dummy tokenizer, one token per word or punctuation mark
// with its trailing spaces; counts, tokens and ids agree.
func TestTokenizer(t *testing.T) {
	s := "Hello, world!  How's it going?\n"
	want := []string{"Hello", ", ", "world", "!  ", "How", "'", "s ", "it ", "going", "?\n"}
	got := AppendTokens(nil, s)
	if !slices.Equal(got, want) {
		t.Fatalf("AppendTokens(%q) = %q, want %q", s, got, want)
	}
	if n := CountTokens(s); n != len(want) {
		t.Fatalf("CountTokens = %d, want %d", n, len(want))
	}
	ids := AppendTokenIDs(nil, s)
	if len(ids) != len(want) || ids[0] != TokenID("Hello") || ids[0] == ids[2] {
		t.Fatalf("ids %v", ids)
	}
	if strings.Join(got, "") != s || CountTokens("   ") != 0 || len(AppendTokens(nil, "")) != 0 {
		t.Fatal("tokens must cover the text and whitespace alone is no token")
	}
}

// TestGenerators: one seed, one answer; lengths stay within their range; preset text has
// exactly the tokens asked for.
func TestGenerators(t *testing.T) {
	draw := func(seed uint64) []string {
		r := NewRNG(Mix(seed, 7))
		n := ResponseLengthHistogram(&r, 1, 200)
		return AppendPresetTokens(nil, &r, n)
	}
	if a, b := draw(1), draw(1); !slices.Equal(a, b) {
		t.Fatal("one seed gave two answers")
	}
	if a, b := draw(1), draw(2); slices.Equal(a, b) {
		t.Fatal("two seeds gave one answer")
	}
	r := NewRNG(3)
	for i := 0; i < 2000; i++ {
		if n := ResponseLengthHistogram(&r, 1, 500); n < 1 || n > 500 {
			t.Fatalf("histogram length %d outside [1, 500]", n)
		}
		if n := ResponseLengthGaussian(&r, 1, 100); n < 1 || n > 100 {
			t.Fatalf("gaussian length %d outside [1, 100]", n)
		}
		if v := r.IntRange(5, 9); v < 5 || v > 9 {
			t.Fatalf("IntRange(5, 9) = %d", v)
		}
	}
	for _, n := range []int{0, 1, 17, 300} {
		if got := len(AppendPresetTokens(nil, &r, n)); got != n {
			t.Fatalf("AppendPresetTokens(%d) gave %d tokens", n, got)
		}
	}
	if PresetToken(0) == "" || PresetToken(len(presetTokens)) != PresetToken(0) {
		t.Fatal("PresetToken must wrap around the preset sentences")
	}
}
