package loadgen_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// conversation is one KeepReplies session of three turns: a 4-word system block plus 2 words,
// then 3 and 2 fresh words, 3 output tokens each.
func conversation() []loadgen.Request {
	turn := func(k, in int) loadgen.Request {
		r := loadgen.Request{SessionID: "s", Turn: k, InputTokens: in, OutputTokens: 3, ContextMode: loadgen.ContextDeltas, KeepReplies: true}
		if k == 0 {
			r.ArrivalMs, r.HashIDs, r.BlockSize = f64(0), []int64{1}, 4
		}
		return r
	}
	return []loadgen.Request{turn(0, 6), turn(1, 3), turn(2, 2)}
}

// chatMessages is a chat request's messages as role/content pairs.
func chatMessages(t *testing.T, req seenRequest) [][2]string {
	t.Helper()
	raw, ok := req.Body["messages"].([]any)
	if !ok {
		t.Fatalf("no messages in %v", req.Body)
	}
	var out [][2]string
	for _, m := range raw {
		msg := m.(map[string]any)
		out = append(out, [2]string{msg["role"].(string), msg["content"].(string)})
	}
	return out
}

func TestKeptRepliesFollowTheirTurnsVerbatim(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    loadgen.API
		stream bool
	}{{"chat streamed", loadgen.APIChat, true}, {"chat whole", loadgen.APIChat, false},
		{"completions streamed", loadgen.APICompletions, true}, {"completions whole", loadgen.APICompletions, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{EchoID: true}
			cfg := baseConfig(fake.start(t).URL)
			cfg.API, cfg.Stream, cfg.RunID = tc.api, tc.stream, "r"
			recs, st := run(t, cfg, conversation())
			if st.Successful != 3 {
				t.Fatalf("stats %+v", st)
			}
			req := func(id string) seenRequest {
				r, ok := fake.byRequestID(id)
				if !ok {
					t.Fatalf("request %s never arrived", id)
				}
				return r
			}
			reply1, reply2 := replyText("r-1", 3), replyText("r-2", 3)
			if tc.api == loadgen.APIChat {
				first, second, third := chatMessages(t, req("r-1")), chatMessages(t, req("r-2")), chatMessages(t, req("r-3"))
				if len(first) != 1 || len(second) != 3 || len(third) != 5 {
					t.Fatalf("messages per turn %d, %d, %d; want 1, 3, 5", len(first), len(second), len(third))
				}
				if second[0] != first[0] || second[1] != [2]string{"assistant", reply1} || second[2][0] != "user" {
					t.Fatalf("turn 2 sent %q; want turn 1's message, then its reply %q", second, reply1)
				}
				if third[3] != [2]string{"assistant", reply2} || [3][2]string(third[:3]) != [3][2]string(second) {
					t.Fatalf("turn 3 sent %q", third)
				}
				if words := len(strings.Fields(third[4][1])); words != 2 {
					t.Fatalf("turn 3's own message has %d words, want 2", words)
				}
			} else {
				p1, p2, p3 := req("r-1").Body["prompt"].(string), req("r-2").Body["prompt"].(string), req("r-3").Body["prompt"].(string)
				if !strings.HasPrefix(p2, p1+reply1) || len(strings.Fields(strings.TrimPrefix(p2, p1+reply1))) != 3 {
					t.Fatalf("turn 2's prompt %q does not continue turn 1's prompt %q with its reply %q", p2, p1, reply1)
				}
				if !strings.HasPrefix(p3, p2+reply2) {
					t.Fatalf("turn 3's prompt %q does not continue turn 2's %q with %q", p3, p2, reply2)
				}
			}
			for _, rec := range recs {
				if rec.Metadata["reply_truncated"] != nil {
					t.Errorf("turn %d marked truncated", rec.Turn)
				}
				if _, ok := rec.Metadata["cached_tokens"].(int); !ok {
					t.Errorf("turn %d: no cached_tokens from the usage's prompt_tokens_details: %v", rec.Turn, rec.Metadata)
				}
			}
			if got := recs[1].Metadata["turn_input_tokens"]; got != 3 {
				t.Errorf("turn 2's own input tokens %v, want 3", got)
			}
		})
	}
}

func TestRepliesWithoutKeepRepliesAreNotSent(t *testing.T) {
	fake := &fakeOpenAI{EchoID: true}
	cfg := baseConfig(fake.start(t).URL)
	cfg.RunID = "r"
	schedule := conversation()
	for i := range schedule {
		schedule[i].KeepReplies = false
	}
	run(t, cfg, schedule)
	r2, _ := fake.byRequestID("r-2")
	for _, m := range chatMessages(t, r2) {
		if m[0] != "user" {
			t.Fatalf("a deltas session without KeepReplies sent %q", chatMessages(t, r2))
		}
	}
}

func TestKeptRepliesStopAtTheSessionCap(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streamed", false: "whole"}[stream]
		t.Run(name, func(t *testing.T) {
			fake := &fakeOpenAI{EchoID: true}
			cfg := baseConfig(fake.start(t).URL)
			cfg.Stream, cfg.RunID = stream, "r"
			reply1 := replyText("r-1", 3)
			// Room for turn 1's reply and 8 bytes of turn 2's: the cut falls inside the "é" of
			// its first token (` r-2:0"é` is 9 bytes, the é two of them), so 7 are kept.
			cfg.MaxReplyBytes = len(reply1) + 8
			recs, st := run(t, cfg, conversation())
			if st.Successful != 3 || st.NotSent != 0 {
				t.Fatalf("stats %+v: a cut reply must not lose a turn", st)
			}
			if recs[0].Metadata["reply_truncated"] != nil || recs[1].Metadata["reply_truncated"] != true {
				t.Fatalf("reply_truncated: turn 1 %v, turn 2 %v", recs[0].Metadata["reply_truncated"], recs[1].Metadata["reply_truncated"])
			}
			if recs[1].OutputTokens != 3 || !recs[1].Successful {
				t.Fatalf("the cut turn is measured as usual: %+v", recs[1])
			}
			r3, _ := fake.byRequestID("r-3")
			msgs := chatMessages(t, r3)
			kept := msgs[3][1]
			if msgs[1][1] != reply1 || kept != ` r-2:0"` || !utf8.ValidString(kept) {
				t.Fatalf("turn 3 carries replies %q and %q; want turn 1's whole and turn 2's cut to %q", msgs[1][1], kept, ` r-2:0"`)
			}
		})
	}
	t.Run("one reply over the cap", func(t *testing.T) {
		fake := &fakeOpenAI{EchoID: true}
		cfg := baseConfig(fake.start(t).URL)
		cfg.RunID, cfg.MaxReplyBytes = "r", 5
		recs, _ := run(t, cfg, conversation())
		r2, _ := fake.byRequestID("r-2")
		if got := chatMessages(t, r2)[1][1]; got != " r-1:" || recs[0].Metadata["reply_truncated"] != true {
			t.Fatalf("kept %q (truncated %v); want the first 5 bytes", got, recs[0].Metadata["reply_truncated"])
		}
	})
}

func TestAFailedTurnLeavesTheHistoryAsItWas(t *testing.T) {
	fake := &fakeOpenAI{EchoID: true, FailRequest: 2}
	cfg := baseConfig(fake.start(t).URL)
	cfg.RunID = "r"
	recs, _ := run(t, cfg, conversation())
	if recs[1].Successful || !recs[2].Successful {
		t.Fatalf("turn 2 should fail and turn 3 succeed: %v %v", recs[1].Error, recs[2].Error)
	}
	r1, _ := fake.byRequestID("r-1")
	r3, _ := fake.byRequestID("r-3")
	msgs := chatMessages(t, r3)
	if len(msgs) != 3 || msgs[0] != chatMessages(t, r1)[0] || msgs[1] != [2]string{"assistant", replyText("r-1", 3)} || msgs[2][0] != "user" {
		t.Fatalf("turn 3 after a failed turn 2 sent %q; want turn 1, its reply, then turn 3", msgs)
	}
}

func TestKeepRepliesIsCheckedBeforeSending(t *testing.T) {
	url := (&fakeOpenAI{}).start(t).URL
	for name, schedule := range map[string][]loadgen.Request{
		"without deltas": {{SessionID: "s", KeepReplies: true}},
		"on some turns":  {{SessionID: "s", ContextMode: loadgen.ContextDeltas, KeepReplies: true}, {SessionID: "s", Turn: 1, ContextMode: loadgen.ContextDeltas}},
	} {
		_, err := loadgen.Run(t.Context(), baseConfig(url), schedule, &memSink{})
		if err == nil || !strings.Contains(err.Error(), "request ") {
			t.Errorf("%s: error %v", name, err)
		}
	}
	cfg := baseConfig(url)
	cfg.MaxReplyBytes = -1
	if _, err := loadgen.Run(t.Context(), cfg, conversation(), &memSink{}); err == nil {
		t.Error("a negative MaxReplyBytes must be refused")
	}
}
