package inferencesim

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
)

func TestDatasetResponses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.sqlite3")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE llmd (id INTEGER PRIMARY KEY, prompt_hash BLOB, gen_tokens JSON, n_gen_tokens INTEGER)`); err != nil {
		t.Fatal(err)
	}
	known := "### user: What is the capital of France?\n"
	answer, _ := json.Marshal([]string{"The ", "capital ", "is ", "Paris", "."})
	other, _ := json.Marshal([]string{"Something ", "else", "."})
	if _, err := db.Exec(`INSERT INTO llmd (prompt_hash, gen_tokens, n_gen_tokens) VALUES (?, ?, 5), (?, ?, 3)`,
		engine.PromptHash(textgen.AppendTokenIDs(nil, known)), string(answer), []byte("nohash"), string(other)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, inMemory := range []string{"false", "true"} {
		ts := startSim(t, "--dataset-path", path, "--dataset-in-memory="+inMemory)
		_, _, body := post(t, ts.url()+"/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":20}`)
		if !strings.Contains(body, `"content":"The capital is Paris."`) || !strings.Contains(body, `"finish_reason":"stop"`) {
			t.Fatalf("in-memory=%s: hit: %s", inMemory, body)
		}
		_, _, body = post(t, ts.url()+"/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":2}`)
		if !strings.Contains(body, `"content":"The capital "`) || !strings.Contains(body, `"finish_reason":"length"`) {
			t.Fatalf("trimmed hit: %s", body)
		}
		_, _, body = post(t, ts.url()+"/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"unknown prompt"}],"max_tokens":3}`)
		if !strings.Contains(body, `"content":"`) || !strings.Contains(body, `"completion_tokens":`) {
			t.Fatalf("miss: %s", body)
		}
	}
	if _, err := config.Parse([]string{"--model", "m", "--dataset-url", "http://x"}, config.Environment{}, nil); err == nil {
		t.Fatal("--dataset-url without --dataset-path accepted")
	}
}
