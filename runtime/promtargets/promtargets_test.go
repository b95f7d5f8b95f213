package promtargets_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lensfn/lensfn/runtime/promtargets"
)

func TestWriteAndRemoveAFileSDGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "targets")
	if err := promtargets.Write(dir, "exec-1", []string{"127.0.0.1:9001", "127.0.0.1:9002"}, map[string]string{"lens_execution_id": "exec-1"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "exec-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(raw, &groups); err != nil || len(groups) != 1 || len(groups[0].Targets) != 2 || groups[0].Labels["lens_execution_id"] != "exec-1" {
		t.Fatalf("file %s (%v)", raw, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("a temporary file was left: %v", entries)
	}
	if err := promtargets.Remove(dir, "exec-1"); err != nil {
		t.Fatal(err)
	}
	if err := promtargets.Remove(dir, "exec-1"); err != nil {
		t.Fatalf("removing a removed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "exec-1.json")); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
}

func TestNamesStayInsideTheDirectory(t *testing.T) {
	for _, name := range []string{"../escape", "a/b", "", ".hidden"} {
		if err := promtargets.Write(t.TempDir(), name, []string{"127.0.0.1:1"}, nil); err == nil {
			t.Fatalf("name %q accepted", name)
		}
	}
}

func TestInstanceIsHostAndPort(t *testing.T) {
	for in, want := range map[string]string{"http://127.0.0.1:8000/v1": "127.0.0.1:8000", "https://sim.example": "sim.example:443",
		"http://[::1]:9/": "[::1]:9", "http://sim": "sim:80"} {
		if got, err := promtargets.Instance(in); err != nil || got != want {
			t.Fatalf("Instance(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := promtargets.Instance("ftp://x"); err == nil {
		t.Fatal("ftp accepted")
	}
}
