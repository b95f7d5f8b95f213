package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMultiTurnSharedPrefixGrowsTheSimulatorsPrefixCacheHits runs a multi-turn shared-prefix
// benchmark against the simulator with its KV cache on: every turn resends the conversation so
// far (the model's replies included), so the share of each prompt the simulator finds cached
// (usage.prompt_tokens_details.cached_tokens, kept in each record) rises turn by turn.
func TestMultiTurnSharedPrefixGrowsTheSimulatorsPrefixCacheHits(t *testing.T) {
	api, _, execID, _, _ := evaluationStack(t)
	id := createRun(t, api, `{"deployment_execution_id":"`+execID+`","shared_prefix":{"num_groups":2,"num_prompts_per_group":2,
		"system_prompt_len":256,"question_len":16,"output_len":16,"enable_multi_turn_chat":true,"stages":[{"rate":8,"duration":3}]}}`)
	run := waitRun(t, api, id, 2*time.Minute, isTerminal)
	if run["status"] != "succeeded" {
		t.Fatalf("run ended %v: %v", run["status"], run["error"])
	}
	m := run["metrics"].(map[string]any)
	if rate, ok := m["prefix_cache_hit_rate"].(float64); !ok || rate <= 0 || m["success_rate"] != 100.0 {
		t.Fatalf("prefix_cache_hit_rate %v, success rate %v", m["prefix_cache_hit_rate"], m["success_rate"])
	}
	code, body := get(t, api+"/runs/"+id+"/artifacts/per-request-jsonl")
	if code != 200 {
		t.Fatalf("artifact: %d %s", code, body)
	}
	// The hit rate of each turn, over the sessions that reached it.
	hits := map[int][2]float64{} // turn -> cached, prompt tokens
	sessions := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var rec struct {
			SessionID   string         `json:"session_id"`
			Turn        int            `json:"turn"`
			InputTokens float64        `json:"input_tokens"`
			Metadata    map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		cached, ok := rec.Metadata["cached_tokens"].(float64)
		if !ok || rec.SessionID == "" {
			t.Fatalf("record without a session or cached tokens: %s", line)
		}
		h := hits[rec.Turn]
		hits[rec.Turn] = [2]float64{h[0] + cached, h[1] + rec.InputTokens}
		sessions[rec.SessionID] = max(sessions[rec.SessionID], rec.Turn+1)
	}
	if len(sessions) != 4 {
		t.Fatalf("sessions %v, want 4 (2 groups x 2 prompts)", sessions)
	}
	rate := func(turn int) float64 { return hits[turn][0] / hits[turn][1] }
	var rates []string
	for turn := 0; turn < len(hits); turn++ {
		rates = append(rates, fmt.Sprintf("turn %d: %.3f", turn, rate(turn)))
	}
	t.Logf("prefix cache hit rate per turn: %s", strings.Join(rates, ", "))
	// Turn 0 finds at most its group's system prompt (none for a group's first session); each
	// later turn finds the whole earlier conversation, a larger share as it grows.
	if len(hits) < 4 || rate(1) <= rate(0) || rate(3) <= rate(1) {
		t.Fatalf("the hit rate does not rise with the turns: %s", strings.Join(rates, ", "))
	}
}
