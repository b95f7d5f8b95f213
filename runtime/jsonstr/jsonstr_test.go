package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var samples = []string{"", "plain", `q"uote\back`, "\n\r\t\b\f\x00\x1f\x7f", "héllo ✓ 😀", "bad\xffbyte", "\xe2\x82",
	"\u2028\u2029", "end\\", "<a href='x'>&amp;</a>", "\ufffd", "mixed \x01<é>\xc0\x80 \u2029!"}

// encodingJSON is what encoding/json writes for s, with and without HTML escaping.
func encodingJSON(t testing.TB, s string, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func check(t testing.TB, s string) {
	if got, want := Append(nil, s), encodingJSON(t, s, false); !bytes.Equal(got, want) {
		t.Fatalf("Append(%q) = %s, encoding/json writes %s", s, got, want)
	}
	if got, want := AppendHTML([]byte("x"), s), append([]byte("x"), encodingJSON(t, s, true)...); !bytes.Equal(got, want) {
		t.Fatalf("AppendHTML(%q) = %s, json.Marshal writes %s", s, got, want)
	}
	if marshalled, _ := json.Marshal(s); !bytes.Equal(AppendHTML(nil, s), marshalled) {
		t.Fatalf("AppendHTML(%q) differs from json.Marshal's %s", s, marshalled)
	}
	if got, want := AppendContents([]byte(`"`), s), Append(nil, s); !bytes.Equal(append(got, '"'), want) {
		t.Fatalf("AppendContents(%q) = %s, want the inside of %s", s, got, want)
	}
	lit := Append(nil, s)
	if !json.Valid(lit) {
		t.Fatalf("%q -> %s is not valid JSON", s, lit)
	}
	if bytes.ContainsAny(lit, "\u2028\u2029\n") || !utf8.Valid(lit) {
		t.Fatalf("%q -> %s holds a raw separator, a newline or invalid UTF-8", s, lit)
	}
}

func TestMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		check(t, s)
	}
	var every strings.Builder // every byte value, alone and in a run
	for c := 0; c < 256; c++ {
		check(t, string(rune(c)))
		check(t, string([]byte{byte(c)}))
		every.WriteByte(byte(c))
	}
	check(t, every.String())
}

func FuzzMatchesEncodingJSON(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func TestAppendAllocatesNothingWithRoom(t *testing.T) {
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "héllo \"world\"\n<&>") }); n != 0 {
		t.Fatalf("%v allocations per Append into a buffer with room", n)
	}
}
