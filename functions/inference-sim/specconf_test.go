package inferencesim

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
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
