package architecture_test

import (
	"os"
	"path/filepath"
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
