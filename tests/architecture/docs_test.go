package architecture_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryPackageHasADocFile: each package says in doc.go what it owns and what it may import.
func TestEveryPackageHasADocFile(t *testing.T) {
	for _, p := range list(t, "./...") {
		rel, _ := ours(p.ImportPath)
		dir := filepath.Join("..", "..", filepath.FromSlash(rel))
		raw, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go", rel)
			continue
		}
		if !strings.Contains(string(raw), "// ") || len(raw) < 60 {
			t.Errorf("%s/doc.go says too little about the package", rel)
		}
	}
}

// ourPath matches a module package named in prose: a path under one of the top-level trees,
// or events/... . The events package itself is also an English word ("KV events"), so it
// counts only where it is named in a list: after "import(s)", a comma or "and".
var (
	ourPath     = regexp.MustCompile(`\b((?:events|runtime|wasm-modules|functions|deploy|tests)(?:/[a-z0-9_-]+)+)\b`)
	eventsNamed = regexp.MustCompile(`(?:\bimports?|,|\band)\s+events\b`)
)

// importStatement is the doc comment's sentences that say what the package imports.
func importStatement(doc string) string {
	var text []string
	for _, line := range strings.Split(doc, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
			text = append(text, strings.TrimSpace(c))
		} else if strings.HasPrefix(line, "package ") {
			break
		}
	}
	var out []string
	for _, sentence := range regexp.MustCompile(`[.;]\s`).Split(strings.Join(text, " ")+" ", -1) {
		if strings.Contains(strings.ToLower(sentence), "import") {
			out = append(out, sentence)
		}
	}
	return strings.Join(out, ". ")
}

// TestDocImportListsMatchTheImports: the packages of this module a doc.go says its package
// may import are the ones it really imports (tests excluded), no more and no fewer, so the
// "may import" lines stay true. A package whose statement allows "anything" (tests/) is
// exempt.
func TestDocImportListsMatchTheImports(t *testing.T) {
	for _, p := range list(t, "./...") {
		rel, _ := ours(p.ImportPath)
		raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel), "doc.go"))
		if err != nil {
			continue // TestEveryPackageHasADocFile reports it
		}
		statement := importStatement(string(raw))
		if statement == "" {
			t.Errorf("%s/doc.go does not say what the package may import", rel)
			continue
		}
		if strings.Contains(statement, "anything") {
			continue
		}
		claimed := map[string]bool{}
		for _, m := range ourPath.FindAllString(statement, -1) {
			if m != rel && !strings.HasSuffix(m, ".md") {
				claimed[strings.TrimSuffix(m, "/")] = true
			}
		}
		if eventsNamed.MatchString(statement) && rel != "events" {
			claimed["events"] = true
		}
		real := map[string]bool{}
		for _, imp := range p.Imports {
			if to, ok := ours(imp); ok {
				real[to] = true
			}
		}
		for to := range real {
			if !claimed[to] {
				t.Errorf("%s imports %s, which its doc.go does not list", rel, to)
			}
		}
		for to := range claimed {
			if !real[to] {
				t.Errorf("%s/doc.go lists %s, which the package does not import", rel, to)
			}
		}
	}
}
