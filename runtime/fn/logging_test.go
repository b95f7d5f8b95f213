package fn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The logger keeps Knative's config-logging contract: K_LOGGING_CONFIG is a zap JSON config over
// Stackdriver-style defaults, LOG_LEVEL overrides its level, and a config it cannot use falls
// back to the defaults with a warning instead of losing the logs.
func TestLoggerFollowsKnativesLoggingConfig(t *testing.T) {
	out := filepath.Join(t.TempDir(), "log.jsonl")
	cfg := `{"level":"info","encoding":"json","outputPaths":["` + out + `"]}`
	log := newLogger(cfg, "warn")
	log.Infow("below the override", "k", 1)
	log.Warnw("at the override", "k", 2)
	_ = log.Sync()
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 1 {
		t.Fatalf("LOG_LEVEL warn should keep only the warning, got %q", raw)
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"severity", "timestamp", "message", "caller"} {
		if _, ok := entry[key]; !ok {
			t.Errorf("entry lacks %q (Knative's Stackdriver field names): %v", key, entry)
		}
	}
	if entry["severity"] != "WARNING" || entry["message"] != "at the override" || entry["k"] != float64(2) {
		t.Errorf("entry %v", entry)
	}
}

func TestLoggerFallsBackOnAConfigItCannotUse(t *testing.T) {
	for _, cfg := range []string{`{"level":`, `{"outputPaths":["/nonexistent-dir/x/y.log"]}`} {
		if log := newLogger(cfg, "info"); log == nil {
			t.Fatalf("%s: no logger", cfg)
		}
	}
}
