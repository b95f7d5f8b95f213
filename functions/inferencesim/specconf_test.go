package inferencesim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
)

// completionLengths sends count text completions with max_tokens and returns each answer's
// completion_tokens and finish_reason.
func completionLengths(t *testing.T, ts *testSim, maxTokens, count int) ([]int, []string) {
	t.Helper()
	lengths, reasons := make([]int, 0, count), make([]string, 0, count)
	body := fmt.Sprintf(`{"model":"fake-model","prompt":"Tell me a story","max_tokens":%d}`, maxTokens)
	for range count {
		s, _, out := post(t, ts.url()+"/v1/completions", body)
		if s != 200 {
			t.Fatalf("status %d: %s", s, out)
		}
		var resp struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Choices) != 1 {
			t.Fatalf("answer %s: %v", out, err)
		}
		lengths = append(lengths, resp.Usage.CompletionTokens)
		reasons = append(reasons, resp.Choices[0].FinishReason)
	}
	return lengths, reasons
}

// TestRandomModeLengthsFollowTheSpecificationsBuckets: with max_tokens, random mode draws
// response lengths from six buckets with probabilities 20/30/20/5/10/15 %, equal buckets up
// to 120 tokens (1-20 … 101-120), 20-token buckets above with the fourth covering the rest
// (200: 1-20, 21-40, 41-60, 61-160, 161-180, 181-200). 4000 draws per setting with a fixed
// seed; each bucket's share must be within 2.5 points (about 4 standard deviations) of its
// probability, and finish_reason "length" comes with the maximum only, at 15 % / 20.
func TestRandomModeLengthsFollowTheSpecificationsBuckets(t *testing.T) {
	ts := startSim(t, "--seed", "11")
	want := []float64{0.20, 0.30, 0.20, 0.05, 0.10, 0.15}
	for _, tc := range []struct {
		maxTokens int
		buckets   [][2]int
	}{
		{120, [][2]int{{1, 20}, {21, 40}, {41, 60}, {61, 80}, {81, 100}, {101, 120}}},
		{200, [][2]int{{1, 20}, {21, 40}, {41, 60}, {61, 160}, {161, 180}, {181, 200}}},
	} {
		const draws = 4000
		lengths, reasons := completionLengths(t, ts, tc.maxTokens, draws)
		counts := make([]int, len(tc.buckets))
		atMax := 0
		for i, n := range lengths {
			if n < 1 || n > tc.maxTokens {
				t.Fatalf("max_tokens %d: length %d outside [1, %d]", tc.maxTokens, n, tc.maxTokens)
			}
			for b, r := range tc.buckets {
				if n >= r[0] && n <= r[1] {
					counts[b]++
				}
			}
			if (n == tc.maxTokens) != (reasons[i] == "length") {
				t.Fatalf("max_tokens %d: length %d with finish_reason %q", tc.maxTokens, n, reasons[i])
			}
			if n == tc.maxTokens {
				atMax++
			}
		}
		for b, c := range counts {
			if got := float64(c) / draws; math.Abs(got-want[b]) > 0.025 {
				t.Errorf("max_tokens %d: bucket %v has %.3f of the draws, want %.2f", tc.maxTokens, tc.buckets[b], got, want[b])
			}
		}
		// The maximum is one of the last bucket's 20 lengths: 0.75 %.
		if got := float64(atMax) / draws; got > 0.015 {
			t.Errorf("max_tokens %d: %.3f of the answers stop at the maximum, want about 0.0075", tc.maxTokens, got)
		}
	}
}

// TestLengthBucketsBetweenTheExamples: buckets stay contiguous, cover the range and match
// the specification's sizes for every maximum (equal up to 120, 20-token ones above).
func TestLengthBucketsBetweenTheExamples(t *testing.T) {
	for hi := 6; hi <= 600; hi++ {
		b, ok := textgen.LengthBuckets(1, hi)
		if !ok || b[0][0] != 1 || b[5][1] != hi {
			t.Fatalf("max %d: buckets %v", hi, b)
		}
		for i := 1; i < 6; i++ {
			if b[i][0] != b[i-1][1]+1 || b[i][1] < b[i][0] {
				t.Fatalf("max %d: buckets %v are not contiguous", hi, b)
			}
			size := b[i][1] - b[i][0] + 1
			if hi > 120 && i != 3 && size != 20 || hi <= 120 && (size < hi/6 || size > hi/6+1) {
				t.Fatalf("max %d: bucket %d has %d lengths (%v)", hi, i, size, b)
			}
		}
	}
	if _, ok := textgen.LengthBuckets(1, 5); ok {
		t.Fatal("five lengths cannot make six buckets")
	}
}

// TestEchoModeIgnoresMaxTokens: echo mode answers the whole prompt and stops, whatever
// max_tokens and ignore_eos say.
func TestEchoModeIgnoresMaxTokens(t *testing.T) {
	ts := startSim(t, "--mode", "echo")
	prompt := "one two three four five six seven eight nine ten"
	for _, extra := range []string{`"max_tokens":2`, `"max_completion_tokens":3,"ignore_eos":true`} {
		s, _, body := post(t, ts.url()+"/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"`+prompt+`"}],`+extra+`}`)
		if s != 200 || !strings.Contains(body, `"content":"`+prompt+`"`) || !strings.Contains(body, `"finish_reason":"stop"`) {
			t.Fatalf("%s: %d %s", extra, s, body)
		}
	}
	s, _, body := post(t, ts.url()+"/v1/completions", `{"model":"fake-model","prompt":"`+prompt+`","max_tokens":1}`)
	if s != 200 || !strings.Contains(body, `"text":"`+prompt+`"`) || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Fatalf("text completion: %d %s", s, body)
	}
}

// TestPrefillDecodeFieldsInBothForms: the P/D fields are read at the top level (the
// specification's form) as well as under kv_transfer_params (vLLM's), and the prefill
// side's answer carries them in both forms.
func TestPrefillDecodeFieldsInBothForms(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "300ms", "--kv-cache-transfer-latency", "5ms")
	const fields = `"do_remote_decode":false,"do_remote_prefill":true,"remote_block_ids":["DUMMY_ID"],"remote_engine_id":"DUMMY_ID","remote_host":"DUMMY","remote_port":1234`
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		input := `"messages":[{"role":"user","content":"hi"}]`
		if path == "/v1/completions" {
			input = `"prompt":"hi"`
		}
		for _, form := range []string{`"do_remote_decode":true`, `"kv_transfer_params":{"do_remote_decode":true}`} {
			s, _, body := post(t, ts.url()+path, `{"model":"fake-model",`+input+`,"max_tokens":3,`+form+`}`)
			var top map[string]json.RawMessage
			if s != 200 || json.Unmarshal([]byte(body), &top) != nil {
				t.Fatalf("%s %s: %d %s", path, form, s, body)
			}
			if !strings.Contains(body, `"finish_reason":"remote_decode"`) || !strings.Contains(body, `"kv_transfer_params":{`+fields+`,"tp_size":1}`) {
				t.Fatalf("%s %s: nested form missing: %s", path, form, body)
			}
			if string(top["do_remote_prefill"]) != "true" || string(top["remote_port"]) != "1234" ||
				string(top["remote_block_ids"]) != `["DUMMY_ID"]` || string(top["do_remote_decode"]) != "false" {
				t.Fatalf("%s %s: top-level form missing: %s", path, form, body)
			}
		}
		// The decode side, top-level form: the KV transfer latency replaces the TTFT.
		start := time.Now()
		s, _, body := post(t, ts.url()+path, `{"model":"fake-model",`+input+`,"max_tokens":1,"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":["1"],"remote_host":"h","remote_port":1}`)
		if took := time.Since(start); s != 200 || took > 150*time.Millisecond {
			t.Fatalf("%s decode side took %v (%d %s): the KV transfer latency must replace the 300ms TTFT", path, took, s, body)
		}
		if strings.Contains(body, "kv_transfer_params") {
			t.Fatalf("%s: the decode side's answer carries P/D fields: %s", path, body)
		}
	}
}

// freePort is a loopback port nothing listens on (yet).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runForLog runs the command with args on a free loopback port, sends one chat completion,
// stops it and returns what it wrote to logFile.
func runForLog(t *testing.T, logFile string, args ...string) string {
	t.Helper()
	port := freePort(t)
	args = append([]string{"--model", "fake-model", "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr strings.Builder
	go func() { done <- Run(ctx, args, config.Environment{}, &stderr) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("simulator did not start: %v (%s)", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s, _, body := post(t, url+"/v1/chat/completions", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, "Authorization", "Bearer sk-never-logged"); s != 200 {
		t.Fatalf("completion: %d %s", s, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v (%s)", err, stderr.String())
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("log file: %v", err)
	}
	return string(b)
}

// TestKlogFlagsSetVerbosityAndTheLogFile: --v and --log_file (with --logtostderr=false) do
// what klog's flags do: --v 4 writes the configuration (level 2) and each completion request
// (level 4), not the admissions (level 5), into the file; a bad klog value is a usage error.
// A --tokenizers-cache-dir without the model's tokenizer.json is warned about once.
// klog's state is the process's and a log file, once opened, stays open: one run writes.
func TestKlogFlagsSetVerbosityAndTheLogFile(t *testing.T) {
	t.Cleanup(func() { _, _ = klogLogger(nil) }) // klog's defaults again for later tests
	logFile := filepath.Join(t.TempDir(), "sim.log")
	got := runForLog(t, logFile, "--v=4", "--logtostderr=false", "--log_file", logFile, "--api-key", "sk-never-logged",
		"--tokenizers-cache-dir", t.TempDir())
	if n := strings.Count(got, "--tokenizers-cache-dir holds no tokenizer.json"); n != 1 || !strings.Contains(got, "\nW") {
		t.Errorf("the tokenizers-cache-dir warning appears %d times (want once, as a klog warning):\n%s", n, got)
	}
	for _, want := range []string{`"inference-sim listening"`, `"configuration"`, `model="fake-model"`, `"completion request"`, `path="/v1/chat/completions"`, `max_tokens=2`} {
		if !strings.Contains(got, want) {
			t.Errorf("log file lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"request admitted"`) {
		t.Errorf("--v 4 wrote level-5 messages:\n%s", got)
	}
	if strings.Contains(got, "sk-never-logged") {
		t.Errorf("the API key was logged:\n%s", got)
	}
	var out strings.Builder
	if err := Run(context.Background(), []string{"--model", "m", "--vmodule", "x=notanumber"}, config.Environment{}, &out); !errors.Is(err, ErrUsage) || !strings.Contains(out.String(), "--vmodule") {
		t.Fatalf("bad --vmodule: %v %s", err, out.String())
	}
	if _, err := config.Parse([]string{"--model", "m", "--v", "loud"}, config.Environment{}, nil); err == nil || !strings.Contains(err.Error(), "--v") {
		t.Fatalf("--v loud: %v", err)
	}
}

// TestKlogVerbosityLevels: the logger klog's flags give enables exactly the specification's
// levels (1 warnings, 2 general, 4 debug, 5 trace) at each --v.
func TestKlogVerbosityLevels(t *testing.T) {
	t.Cleanup(func() { _, _ = klogLogger(nil) })
	levels := []slog.Level{levelWarn, levelInfo, levelDebug, levelTrace}
	for v, want := range map[string][]bool{
		"0": {false, false, false, false}, "1": {true, false, false, false}, "2": {true, true, false, false},
		"4": {true, true, true, false}, "5": {true, true, true, true},
	} {
		log, err := klogLogger([]config.KlogSetting{{Name: "v", Value: v}})
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range levels {
			if got := log.Enabled(context.Background(), l); got != want[i] {
				t.Errorf("--v %s: level %d enabled %v, want %v", v, l, got, want[i])
			}
		}
		if !log.Enabled(context.Background(), slog.LevelInfo) {
			t.Errorf("--v %s: the always-on messages are off", v)
		}
	}
}

// tokenizeIDs asks /tokenize for the ids of prompt.
func tokenizeIDs(t *testing.T, ts *testSim, prompt string) []uint32 {
	t.Helper()
	s, _, body := post(t, ts.url()+"/tokenize", `{"prompt":"`+prompt+`"}`)
	var out struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if s != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Count != len(out.Tokens) {
		t.Fatalf("/tokenize: %d %s", s, body)
	}
	return out.Tokens
}

// promptTokens is a text completion's usage.prompt_tokens for prompt.
func promptTokens(t *testing.T, ts *testSim, model, prompt string) int {
	t.Helper()
	s, _, body := post(t, ts.url()+"/v1/completions", `{"model":"`+model+`","prompt":"`+prompt+`","max_tokens":1}`)
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if s != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("completion: %d %s", s, body)
	}
	return out.Usage.PromptTokens
}

// TestARealTokenizerFromALocalFile: --tokenizer loads a Hugging Face tokenizer.json (here a
// small BPE with a lowercase normalizer and merges up to "hello" and "world"), and /tokenize and
// the prompt counts follow it; --tokenizers-cache-dir finds the model's file in either cache
// layout; the dummy tokenizer stays the default; a missing file is an error, never a download.
func TestARealTokenizerFromALocalFile(t *testing.T) {
	const fixture = "testdata/tokenizer/tokenizer.json"
	want := []uint32{11, 16, 14, 17} // hello , world !
	dummy := startSim(t)
	if got := tokenizeIDs(t, dummy, "Hello, world!"); slices.Equal(got, want) || promptTokens(t, dummy, "fake-model", "helloworld") != 1 {
		t.Fatalf("the default is not the dummy tokenizer: %v", got)
	}
	loaded := startSim(t, "--tokenizer", fixture)
	if got := tokenizeIDs(t, loaded, "Hello, world!"); !slices.Equal(got, want) {
		t.Fatalf("--tokenizer ids %v, want %v", got, want)
	}
	if n := promptTokens(t, loaded, "fake-model", "helloworld"); n != 2 {
		t.Fatalf("prompt_tokens %d with the BPE tokenizer, want 2 (hello + world)", n)
	}
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	place := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	direct := t.TempDir()
	place(filepath.Join(direct, "fake-model", "tokenizer.json"))
	if got := tokenizeIDs(t, startSim(t, "--tokenizers-cache-dir", direct), "Hello, world!"); !slices.Equal(got, want) {
		t.Fatalf("<dir>/<model>/tokenizer.json: %v", got)
	}
	hub := t.TempDir()
	place(filepath.Join(hub, "models--acme--tiny", "snapshots", "0123abcd", "tokenizer.json"))
	cached := startSim(t, "--model", "acme/tiny", "--tokenizers-cache-dir", hub)
	if got := tokenizeIDs(t, cached, "Hello, world!"); !slices.Equal(got, want) || promptTokens(t, cached, "acme/tiny", "helloworld") != 2 {
		t.Fatalf("the hub layout: %v", got)
	}
	var stderr strings.Builder
	err = Run(context.Background(), []string{"--model", "m", "--tokenizer", filepath.Join(t.TempDir(), "missing.json")}, config.Environment{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "nothing is downloaded") {
		t.Fatalf("a missing tokenizer: %v", err)
	}
}
