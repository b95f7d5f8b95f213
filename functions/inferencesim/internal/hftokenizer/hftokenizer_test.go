package hftokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const fixture = "../../testdata/tokenizer/tokenizer.json"

func TestLoadAndEncode(t *testing.T) {
	tok, err := Load(filepath.Dir(fixture)) // a directory holding tokenizer.json
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.AppendIDs(nil, "Hello, world!"); !slices.Equal(got, []uint32{11, 16, 14, 17}) || tok.Count("helloworld") != 2 {
		t.Fatalf("ids %v, count %d", got, tok.Count("helloworld"))
	}
	notJSON := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(notJSON, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(notJSON); err == nil || !strings.Contains(err.Error(), "not a Hugging Face tokenizer.json") {
		t.Fatalf("not JSON: %v", err)
	}
}

func TestFindInCache(t *testing.T) {
	dir := t.TempDir()
	if got, err := FindInCache(dir, "org/name"); got != "" || err != nil {
		t.Fatalf("empty cache: %q %v", got, err)
	}
	hub := filepath.Join(dir, "models--org--name", "snapshots", "rev1", FileName)
	if err := os.MkdirAll(filepath.Dir(hub), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hub, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := FindInCache(dir, "org/name"); got != hub {
		t.Fatalf("hub layout: %q", got)
	}
	if got, _ := FindInCache(dir, "../org/name"); got != "" {
		t.Fatalf("a model name leaving the directory was followed: %q", got)
	}
}
