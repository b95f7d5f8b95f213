package benchmarkrunner_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// sessionRecords reads a run's per-request artifact grouped by session, each in turn order.
func sessionRecords(t *testing.T, h *harness, id string) map[string][]loadgen.Record {
	t.Helper()
	f, err := os.Open(h.runs.RunDir(id) + "/" + benchmarkrunner.RecordsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]loadgen.Record{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec loadgen.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		out[rec.SessionID] = append(out[rec.SessionID], rec)
	}
	for _, recs := range out {
		slices.SortFunc(recs, func(a, b loadgen.Record) int { return a.Turn - b.Turn })
	}
	return out
}

// checkTurnsFollowEachOther: every session's turns are 0..n-1, each started after the previous
// one completed, and the conversation is spread over several turns.
func checkTurnsFollowEachOther(t *testing.T, sessions map[string][]loadgen.Record, want int) {
	t.Helper()
	if len(sessions) != want {
		t.Fatalf("%d sessions in the records, want %d (num_groups x num_prompts_per_group)", len(sessions), want)
	}
	for id, recs := range sessions {
		if len(recs) < 2 {
			t.Fatalf("session %s has %d turns", id, len(recs))
		}
		for k, rec := range recs {
			if rec.Turn != k || !rec.Successful {
				t.Fatalf("session %s: record %d is turn %d (successful %v, error %v)", id, k, rec.Turn, rec.Successful, rec.Error)
			}
			if k > 0 && rec.StartedAtSeconds < recs[k-1].CompletedAtSeconds {
				t.Fatalf("session %s: turn %d started at %.4f before turn %d completed at %.4f", id, k, rec.StartedAtSeconds, k-1, recs[k-1].CompletedAtSeconds)
			}
			if _, ok := rec.Metadata["stage"]; !ok {
				t.Fatalf("turn without its rate stage: %v", rec.Metadata)
			}
		}
	}
}

// runConversations runs a multi-turn run body against an echoing fake until it succeeded and
// checks its sessions' turns; the fake comes back locked (its requests are the caller's to read).
func runConversations(t *testing.T, settings benchmarkrunner.Settings, body string, sessions int) (*fakeModel, map[string]any, map[string][]loadgen.Record) {
	t.Helper()
	model := &fakeModel{ttft: 3 * time.Millisecond, itl: time.Millisecond, echo: true}
	h := start(t, model, settings)
	id := h.create(t, body)
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v %v", m["status"], m["error"])
	}
	recs := sessionRecords(t, h, id)
	checkTurnsFollowEachOther(t, recs, sessions)
	model.mu.Lock()
	t.Cleanup(model.mu.Unlock)
	return model, m, recs
}

func TestMultiTurnSharedPrefixSendsTheConversationSoFar(t *testing.T) {
	model, m, sessions := runConversations(t, fast(), `{"deployment_execution_id":"exec-1","shared_prefix":{"num_groups":2,"num_prompts_per_group":2,
		"system_prompt_len":40,"question_len":8,"output_len":4,"enable_multi_turn_chat":true,
		"stages":[{"rate":20,"duration":1},{"rate":20,"duration":1}]}}`, 4)
	systems := map[string]string{} // group -> its system prompt
	total := 0
	for sid, recs := range sessions {
		total += len(recs)
		for k, rec := range recs {
			reqID := rec.Metadata["x_request_id"].(string)
			prompt := model.byID[reqID].Prompt
			if k == 0 {
				words := strings.Fields(prompt)
				if len(words) != 48 {
					t.Fatalf("session %s opens with %d words, want system 40 + question 8", sid, len(words))
				}
				group := strings.SplitN(sid, "-", 2)[0]
				system := strings.Join(words[:40], " ")
				if other, ok := systems[group]; ok && other != system {
					t.Fatalf("group %s's sessions open with different system prompts", group)
				}
				systems[group] = system
				continue
			}
			prev := recs[k-1]
			prevPrompt := model.byID[prev.Metadata["x_request_id"].(string)].Prompt
			reply := echoReply(prev.Metadata["x_request_id"].(string), 4)
			question, ok := strings.CutPrefix(prompt, prevPrompt+reply)
			if !ok || len(strings.Fields(question)) != 8 {
				t.Fatalf("session %s turn %d sent %q; want turn %d's prompt %q, its reply %q verbatim, then 8 new words",
					sid, k, prompt, k-1, prevPrompt, reply)
			}
		}
	}
	if len(systems) != 2 || systems["g0"] == systems["g1"] {
		t.Fatalf("system prompts per group: %v", systems)
	}
	if got := m["metrics"].(map[string]any)["request_count"]; got != float64(total) {
		t.Fatalf("request_count %v, %d records", got, total)
	}
}

func TestMultiTurnChatWorkloadYAMLSendsAssistantMessages(t *testing.T) {
	yaml := "load: {type: poisson, stages: [{rate: 30, duration: 1}]}\napi: {type: chat, streaming: true}\n" +
		"data:\n  type: shared_prefix\n  shared_prefix: {num_groups: 1, num_prompts_per_group: 3, system_prompt_len: 16, question_len: 4, output_len: 3, enable_multi_turn_chat: true}\n"
	body, _ := json.Marshal(map[string]any{"deployment_execution_id": "exec-1", "workload_yaml": yaml})
	model, _, sessions := runConversations(t, fast(), string(body), 3)
	for sid, recs := range sessions {
		var want []chatMessage
		for k, rec := range recs {
			reqID := rec.Metadata["x_request_id"].(string)
			got := model.byID[reqID].Messages
			if k == 0 {
				// The conversation opens with the group's system prompt as the system message.
				if len(got) != 2 || got[0].Role != "system" || len(strings.Fields(got[0].Content)) != 16 ||
					got[1].Role != "user" || len(strings.Fields(got[1].Content)) != 4 {
					t.Fatalf("session %s opens with %v; want a 16-word system message, then a 4-word user message", sid, got)
				}
				want = append(want, got[0])
			}
			n := len(want)
			if len(got) != n+1 || !slices.Equal(got[:n], want) || got[n].Role != "user" {
				t.Fatalf("session %s turn %d sent %v; want the earlier messages %v, then a user message", sid, k, got, want)
			}
			want = append(want, got[n], chatMessage{Role: "assistant", Content: echoReply(reqID, 3)})
		}
	}
}

// A chat shared-prefix workload sends each group's system prompt as the system message and
// the question as the user message, as inference-perf does (not one user message holding both),
// and repeats its num_groups x num_prompts_per_group prompts whole.
func TestChatSharedPrefixSendsTheSystemPromptAsTheSystemMessage(t *testing.T) {
	yaml := "load: {type: poisson, stages: [{rate: 40, duration: 1}]}\napi: {type: chat, streaming: true}\n" +
		"data:\n  type: shared_prefix\n  shared_prefix: {num_groups: 2, num_prompts_per_group: 3, system_prompt_len: 12, question_len: 5, output_len: 2}\n"
	body, _ := json.Marshal(map[string]any{"deployment_execution_id": "exec-1", "workload_yaml": yaml})
	model := &fakeModel{ttft: time.Millisecond, itl: time.Millisecond, echo: true}
	h := start(t, model, fast())
	id := h.create(t, string(body))
	if m := doc(t, h.waitFor(t, id, 30*time.Second, terminal)); m["status"] != "succeeded" {
		t.Fatalf("status %v %v", m["status"], m["error"])
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	systems := map[any]string{} // group -> its system prompt
	questions := map[string]bool{}
	n := 0
	for _, recs := range sessionRecords(t, h, id) {
		for _, rec := range recs {
			n++
			got := model.byID[rec.Metadata["x_request_id"].(string)].Messages
			if len(got) != 2 || got[0].Role != "system" || got[1].Role != "user" ||
				len(strings.Fields(got[0].Content)) != 12 || len(strings.Fields(got[1].Content)) != 5 {
				t.Fatalf("request %v sent %v; want a 12-word system message, then a 5-word user message", rec.Metadata["x_request_id"], got)
			}
			group := rec.Metadata["group"]
			if other, ok := systems[group]; ok && other != got[0].Content {
				t.Fatalf("group %v's requests carry different system prompts:\n%q\n%q", group, other, got[0].Content)
			}
			systems[group] = got[0].Content
			questions[got[1].Content] = true
		}
	}
	if n < 10 || len(systems) != 2 || systems[float64(0)] == systems[float64(1)] {
		t.Fatalf("%d requests, system prompts per group %v", n, systems)
	}
	// inference-perf's prompts repeat whole: num_groups x num_prompts_per_group questions, each
	// sent again every time its prompt comes round.
	if n < 12 || len(questions) != 6 {
		t.Fatalf("%d distinct questions for %d requests, want the 2 x 3 prompts' 6", len(questions), n)
	}
}

// With parallelism 2 each worker holds its own conversations, as N harness pods would: the
// sessions (and the X-Session-ID a router sees) are w0-... and w1-..., each a whole conversation.
func TestParallelMultiTurnWorkersHoldTheirOwnConversations(t *testing.T) {
	model, _, sessions := runConversations(t, parallel(), `{"deployment_execution_id":"exec-1","parallelism":2,"shared_prefix":{"num_groups":1,
		"num_prompts_per_group":2,"system_prompt_len":8,"question_len":4,"output_len":2,"enable_multi_turn_chat":true,
		"stages":[{"rate":10,"duration":3}]}}`, 4) // 3 s: a session's later turns wait for its first, which a loaded host can hold up
	for sid, recs := range sessions {
		if !strings.HasPrefix(sid, fmt.Sprintf("w%v-g0-p", recs[0].Metadata["worker"])) {
			t.Fatalf("worker %v sent session %q", recs[0].Metadata["worker"], sid)
		}
		for k := 1; k < len(recs); k++ {
			prev := recs[k-1].Metadata["x_request_id"].(string)
			if !strings.HasPrefix(model.byID[recs[k].Metadata["x_request_id"].(string)].Prompt, model.byID[prev].Prompt+echoReply(prev, 2)) {
				t.Fatalf("session %s turn %d does not continue its own conversation", sid, k)
			}
		}
	}
}
