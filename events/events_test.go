package events_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/events"
)

var typePattern = regexp.MustCompile(`^dev\.lensfn\.[a-z]+(\.[a-z][a-z-]*)+\.v[0-9]+$`)

func TestCatalogueTypesAreReverseDNSAndVersioned(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range events.Catalogue {
		if !typePattern.MatchString(d.Type) {
			t.Errorf("%q is not a reverse-DNS versioned type", d.Type)
		}
		if seen[d.Type] {
			t.Errorf("%q is listed twice", d.Type)
		}
		seen[d.Type] = true
		if !strings.HasPrefix(d.Source, "/lensfn/") {
			t.Errorf("%s: source %q is not a /lensfn/ path", d.Type, d.Source)
		}
		if _, ok := events.Lookup(d.Type); !ok {
			t.Errorf("Lookup(%q) failed", d.Type)
		}
	}
	if _, ok := events.Lookup("dev.lensfn.nope.v1"); ok {
		t.Error("Lookup found an unknown type")
	}
}

// TestSchemasAreFresh fails when a payload struct changed without `go generate ./events`.
func TestSchemasAreFresh(t *testing.T) {
	want := map[string]bool{}
	for _, d := range events.Catalogue {
		file := events.SchemaFile(d.Type)
		want[file] = true
		generated, err := events.Schema(d)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := os.ReadFile(filepath.Join("schemas", file))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./events)", file, err)
		}
		if !bytes.Equal(stored, generated) {
			t.Errorf("schemas/%s is stale: run go generate ./events", file)
		}
	}
	entries, _ := os.ReadDir("schemas")
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("schemas/%s has no event type in the catalogue", e.Name())
		}
	}
}

func TestSchemaRequiresFieldsAndRejectsUnknown(t *testing.T) {
	d, _ := events.Lookup(events.TypeDatasetDownloaded)
	raw, err := events.Schema(d)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Required             []string                  `json:"required"`
		AdditionalProperties bool                      `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Required) != 5 || s.AdditionalProperties {
		t.Fatalf("required=%v additionalProperties=%v", s.Required, s.AdditionalProperties)
	}
	if s.Properties["size_bytes"]["type"] != "integer" || s.Properties["dataset"]["type"] != "string" {
		t.Fatalf("property types wrong: %v", s.Properties)
	}
}
