package inferencesim

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
)

// datasetRow is one stored answer of a test dataset: the prompt's hash, the answer's tokens
// and the token count the row claims.
type datasetRow struct {
	hash   []byte
	tokens []string
	n      int
}

// writeDataset writes a SQLite dataset in llm-d's layout (table llmd) and returns its path.
func writeDataset(t *testing.T, rows ...datasetRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dataset.sqlite3")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE llmd (id INTEGER PRIMARY KEY, prompt_hash BLOB, gen_tokens JSON, n_gen_tokens INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		toks, _ := json.Marshal(r.tokens)
		if _, err := db.Exec(`INSERT INTO llmd (prompt_hash, gen_tokens, n_gen_tokens) VALUES (?, ?, ?)`, r.hash, string(toks), r.n); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestDatasetResponses(t *testing.T) {
	known := "### user: What is the capital of France?\n"
	path := writeDataset(t,
		datasetRow{engine.PromptHash(textgen.AppendTokenIDs(nil, known)), []string{"The ", "capital ", "is ", "Paris", "."}, 5},
		datasetRow{[]byte("nohash"), []string{"Something ", "else", "."}, 3})

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

// A text completion is answered from the dataset by each prompt's own token ids (a text
// prompt tokenized, a token-id prompt as given), every one of its n sequences alike. The
// stored answers claim more tokens than max_tokens allows, so the random fallback (rows that
// fit) can never pick them: a lookup that missed answers "Something else." instead.
func TestDatasetAnswersTextCompletionsByEachPrompt(t *testing.T) {
	france, germany := "The capital of France is", "The capital of Germany is"
	path := writeDataset(t,
		datasetRow{engine.PromptHash(textgen.AppendTokenIDs(nil, france)), []string{" Paris", "."}, 1000},
		datasetRow{engine.PromptHash(textgen.AppendTokenIDs(nil, germany)), []string{" Berlin", "."}, 1000},
		datasetRow{[]byte("nohash"), []string{"Something ", "else", "."}, 3})
	germanyIDs, _ := json.Marshal(textgen.AppendTokenIDs(nil, germany))

	for _, kv := range []string{"false", "true"} { // with the prefix cache, the first prompt's ids are already known
		ts := startSimEnv(t, config.Environment{PodIP: "127.0.0.1"}, "--dataset-path", path, "--enable-kvcache="+kv)
		for _, tc := range []struct {
			name, prompt string
			want         []string // each choice's text, by index
		}{
			{"one text prompt", `"` + france + `"`, []string{" Paris."}},
			{"two prompts, n=2", `["` + france + `","` + germany + `"]`, []string{" Paris.", " Paris.", " Berlin.", " Berlin."}},
			{"token ids", string(germanyIDs), []string{" Berlin."}},
			{"a list of token-id lists", `[` + string(germanyIDs) + `]`, []string{" Berlin."}},
		} {
			n := len(tc.want)
			if tc.name == "two prompts, n=2" {
				n = 2
			}
			status, _, body := post(t, ts.url()+"/v1/completions",
				`{"model":"fake-model","prompt":`+tc.prompt+`,"n":`+itoa(n)+`,"max_tokens":20}`)
			var resp struct {
				Choices []struct {
					Index int    `json:"index"`
					Text  string `json:"text"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(body), &resp); status != 200 || err != nil || len(resp.Choices) != len(tc.want) {
				t.Fatalf("kvcache=%s %s: %d %s", kv, tc.name, status, body)
			}
			for _, c := range resp.Choices {
				if c.Text != tc.want[c.Index] {
					t.Fatalf("kvcache=%s %s: choice %d says %q, want %q (%s)", kv, tc.name, c.Index, c.Text, tc.want[c.Index], body)
				}
			}
		}
	}
}
