package jsonscan_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/tracefmt/jsonscan"
)

// FuzzIntArray: whenever encoding/json reads an array of exact integers, so does the scanner,
// with the same values.
func FuzzIntArray(f *testing.F) {
	for _, s := range []string{`[]`, `[0, 1, 2]`, `[ 12 ,3\n,-4 ]`, `[1e2]`, `[9007199254740993]`, `[1,]`, `[1, ]`, `[01]`,
		`[12345678, 1234567, 123456789012, 0, 7]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want []int64
		wantErr := json.Unmarshal([]byte(in), &want)
		var sc jsonscan.Scanner
		sc.Reset([]byte(in))
		got, err := sc.IntArray(nil)
		if err == nil {
			err = sc.End()
		}
		if wantErr == nil && err == nil && !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%q: got %v, encoding/json %v", in, got, want)
		}
		if wantErr == nil && err != nil && !hasFloatSyntax(in) {
			t.Fatalf("%q: scanner rejected (%v) what encoding/json accepts", in, err)
		}
		if wantErr != nil && err == nil && !leadingZero(in) && !hasFloatSyntax(in) {
			t.Fatalf("%q: scanner accepted what encoding/json rejects (%v)", in, wantErr)
		}
	})
}

// leadingZero: Int accepts "01" (and, like 1.0 and 1e2, whole numbers in float syntax);
// encoding/json does not. That leniency is deliberate and harmless.
func leadingZero(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '0' && s[i+1] >= '0' && s[i+1] <= '9' && (i == 0 || s[i-1] < '0' || s[i-1] > '9') {
			return true
		}
	}
	return false
}

func hasFloatSyntax(s string) bool {
	for _, c := range s {
		if c == '.' || c == 'e' || c == 'E' || c == 'n' {
			return true
		}
	}
	return false
}

func TestObjectWalk(t *testing.T) {
	var sc jsonscan.Scanner
	sc.Reset([]byte(` {"a": 1.5, "b\u0041": "x\"\u00e9", "c": [1, {"d": null}], "e": -2, "f": null} `))
	if err := sc.BeginObject(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for {
		k, ok, err := sc.NextKey()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		keys = append(keys, string(k))
		switch string(k) {
		case "a":
			if v, err := sc.Float(); err != nil || v != 1.5 {
				t.Fatalf("a = %v, %v", v, err)
			}
		case "bA":
			if v, err := sc.String(); err != nil || v != "x\"é" {
				t.Fatalf("bA = %q, %v", v, err)
			}
		case "c":
			if raw, err := sc.Raw(); err != nil || string(raw) != `[1, {"d": null}]` {
				t.Fatalf("c = %s, %v", raw, err)
			}
		case "e":
			if v, err := sc.Int(); err != nil || v != -2 {
				t.Fatalf("e = %v, %v", v, err)
			}
		case "f":
			if !sc.Null() {
				t.Fatal("f is null")
			}
		}
	}
	if err := sc.End(); err != nil || !slices.Equal(keys, []string{"a", "bA", "c", "e", "f"}) {
		t.Fatalf("keys %v, %v", keys, err)
	}
	sc.Reset([]byte(`[1e400]`))
	if _, err := sc.IntArray(nil); err == nil {
		t.Fatal("1e400 accepted as an integer")
	}
}
