package jsoncursor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/jsoncursor"
)

func cursor(s string) *jsoncursor.Cursor {
	c := &jsoncursor.Cursor{}
	c.Reset([]byte(s))
	return c
}

func TestNumberFollowsTheGrammar(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true}, {"-0", "-0", true}, {"12.5e+3,", "12.5e+3", true}, {"1E9}", "1E9", true},
		{"007", "0", true}, // the leading zero is the number; what follows is the caller's to refuse
		{"-", "", false}, {".5", "", false}, {"1.", "", false}, {"1e", "", false}, {"+1", "", false},
	} {
		c := cursor(tt.in)
		got, ok := c.Number()
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("Number(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if !ok && c.I != 0 {
			t.Errorf("Number(%q) failed but moved the cursor to %d", tt.in, c.I)
		}
	}
}

func TestIntRefusesWhatAnIntegerFieldRefuses(t *testing.T) {
	for _, in := range []string{"1.5", "1e3", "9223372036854775808"} {
		if v, ok := cursor(in).Int(); ok {
			t.Errorf("Int(%q) = %d, want a refusal", in, v)
		}
	}
	if v, ok := cursor("-9223372036854775808").Int(); !ok || v != -9223372036854775808 {
		t.Errorf("Int(min int64) = %d, %v", v, ok)
	}
}

func TestPlainStringLeavesEscapesAndNonASCIIToTheFallback(t *testing.T) {
	if got, ok := cursor(`"chat.completion.chunk"`).PlainString(); !ok || string(got) != "chat.completion.chunk" {
		t.Fatalf("plain: %q, %v", got, ok)
	}
	for _, in := range []string{`"a\"b"`, `"é"`, "\"a\tb\"", `"open`, `x`} {
		if got, ok := cursor(in).PlainString(); ok {
			t.Errorf("PlainString(%q) = %q, want a refusal", in, got)
		}
	}
}

func TestTokensAndLiterals(t *testing.T) {
	c := cursor(" \t{\n\"k\" : true , \"n\":null}  ")
	if !c.Token('{') || c.Peek() != '"' {
		t.Fatal("object start")
	}
	if k, ok := c.PlainString(); !ok || string(k) != "k" || !c.Token(':') {
		t.Fatal("first key")
	}
	c.Skip()
	if v, ok := c.Bool(); !ok || !v || !c.Token(',') {
		t.Fatal("true")
	}
	c.Skip()
	c.PlainString()
	if !c.Token(':') || c.Is(' ') || !c.Null() || !c.Token('}') || !c.AtEnd() {
		t.Fatal("null member and end")
	}
}

func TestSkipValueDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", jsoncursor.MaxDepth+1) + strings.Repeat("]", jsoncursor.MaxDepth+1)
	if _, ok := cursor(deep).SkipValue(); ok {
		t.Fatalf("nesting of %d accepted", jsoncursor.MaxDepth+1)
	}
	ok := strings.Repeat("[", jsoncursor.MaxDepth) + strings.Repeat("]", jsoncursor.MaxDepth)
	if _, accepted := cursor(ok).SkipValue(); !accepted {
		t.Fatalf("nesting of %d refused", jsoncursor.MaxDepth)
	}
}

// FuzzSkipValueNeverAcceptsInvalidJSON: whatever SkipValue accepts as a whole input is valid
// JSON, and null is reported only for null. (It may refuse valid JSON; callers fall back.)
func FuzzSkipValueNeverAcceptsInvalidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `null`, `-0.5e-3`, `"\ud800"`, `[1,]`, `{"a" 1}`, `tru`, `"\x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c := cursor(in)
		null, ok := c.SkipValue()
		if !ok || c.I != len(in) {
			return
		}
		if !json.Valid([]byte(in)) {
			t.Fatalf("SkipValue accepted %q, which encoding/json refuses", in)
		}
		if null != (in == "null") {
			t.Fatalf("SkipValue(%q) null = %v", in, null)
		}
	})
}

// FuzzScalarsMatchEncodingJSON: a number or plain string the cursor accepts decodes to exactly
// what encoding/json gives.
func FuzzScalarsMatchEncodingJSON(f *testing.F) {
	for _, s := range []string{`12`, `-3.25e2`, `1e400`, `"abc"`, `0.1`, `"a b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if v, ok := cursor(in).Float(); ok && len(in) > 0 {
			c := cursor(in)
			c.Number()
			if c.I == len(in) {
				var want float64
				if err := json.Unmarshal([]byte(in), &want); err != nil || want != v {
					t.Fatalf("Float(%q) = %v; encoding/json: %v, %v", in, v, want, err)
				}
			}
		}
		if v, ok := cursor(in).Int(); ok {
			c := cursor(in)
			c.Number()
			if c.I == len(in) {
				var want int64
				if err := json.Unmarshal([]byte(in), &want); err != nil || want != v {
					t.Fatalf("Int(%q) = %v; encoding/json: %v, %v", in, v, want, err)
				}
			}
		}
		c := cursor(in)
		if s, ok := c.PlainString(); ok && c.I == len(in) {
			var want string
			if err := json.Unmarshal([]byte(in), &want); err != nil || want != string(s) {
				t.Fatalf("PlainString(%q) = %q; encoding/json: %q, %v", in, s, want, err)
			}
		}
	})
}
