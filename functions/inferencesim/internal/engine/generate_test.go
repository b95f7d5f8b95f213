package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

func testGenerator(t *testing.T, args ...string) (*Generator, *config.Config) {
	t.Helper()
	cfg, err := config.Parse(append([]string{"--model", "m", "--seed", "5", "--max-model-len", "256"}, args...), config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewGenerator(cfg, nil, nil, NewLoRARegistry(nil)), cfg
}

// decoded is a Request with body decoded and its identity given, ready for Check.
func decoded(t *testing.T, kind Kind, body string) *Request {
	t.Helper()
	r := &Request{}
	r.Begin(kind, 5, 1)
	if e := r.Wire.Decode([]byte(body), kind == Chat); e != nil {
		t.Fatalf("decode %s: %v", body, e)
	}
	return r
}

// TestCheckRefusesWhatCannotBeGenerated: each bound of Check answers with the OpenAI error
// naming the parameter, before anything is generated.
func TestCheckRefusesWhatCannotBeGenerated(t *testing.T) {
	g, _ := testGenerator(t)
	for name, tc := range map[string]struct {
		kind        Kind
		body, param string
		msg         string
	}{
		"max_tokens 0":     {Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, "max_tokens", "at least 1"},
		"n over the bound": {Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":100000}`, "n", "at most"},
		"no messages":      {Chat, `{"model":"m","messages":[]}`, "messages", "must not be empty"},
		"context window":   {Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":300}`, "", "maximum context length is 256"},
		"output budget":    {Text, `{"model":"m","prompt":["a","b","c","d","e","f","g","h"],"n":16,"logprobs":20,"max_tokens":200}`, "max_tokens", "could generate"},
		"tool_choice name": {Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice", "not in tools"},
		"array schema":     {Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"xs":{"type":"array"}}}}}]}`, "tools", "needs items"},
	} {
		t.Run(name, func(t *testing.T) {
			e := g.Check(decoded(t, tc.kind, tc.body))
			if e == nil || e.Status != 400 || e.Param != tc.param || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %+v, want a 400 on %q saying %q", e, tc.param, tc.msg)
			}
		})
	}
}

func generated(t *testing.T, g *Generator, kind Kind, body string) *Request {
	t.Helper()
	r := decoded(t, kind, body)
	if e := g.Check(r); e != nil {
		t.Fatal(e)
	}
	g.Generate(r)
	return r
}

// TestGenerateIsReproducibleAndBounded: one seed gives the same sequences; n sequences per
// prompt, each within max_tokens, and ignore_eos fills max_tokens with finish "length".
func TestGenerateIsReproducibleAndBounded(t *testing.T) {
	g, _ := testGenerator(t)
	body := `{"model":"m","prompt":["one two","three"],"n":3,"max_tokens":12}`
	a, b := generated(t, g, Text, body), generated(t, g, Text, body)
	if len(a.Seqs) != 6 {
		t.Fatalf("%d sequences, want 2 prompts x 3", len(a.Seqs))
	}
	for i := range a.Seqs {
		s := &a.Seqs[i]
		if strings.Join(s.Tokens, "") != strings.Join(b.Seqs[i].Tokens, "") {
			t.Fatalf("sequence %d differs for one seed", i)
		}
		if len(s.Tokens) < 1 || len(s.Tokens) > 12 || s.Index != i || s.MaxTokens != 12 {
			t.Fatalf("sequence %d: %d tokens, index %d, max %d", i, len(s.Tokens), s.Index, s.MaxTokens)
		}
	}
	full := generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,"ignore_eos":true}`)
	if s := full.Seqs[0]; len(s.Tokens) != 9 || s.Finish != FinishLength {
		t.Fatalf("ignore_eos: %d tokens, finish %q; want 9, length", len(s.Tokens), s.Finish)
	}
	if full.CompletionTokens() != 9 {
		t.Fatalf("completion tokens %d", full.CompletionTokens())
	}
}

// TestEchoModeAnswersTheLastUserMessage: --mode echo repeats the last user turn whole, as
// the specification says (max_tokens is ignored: it neither cuts the answer nor makes it
// finish with "length").
func TestEchoModeAnswersTheLastUserMessage(t *testing.T) {
	g, _ := testGenerator(t, "--mode", "echo")
	r := generated(t, g, Chat, `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"say it back"}]}`)
	if got := strings.Join(r.Seqs[0].Tokens, ""); got != "say it back" || r.Seqs[0].Finish != FinishStop {
		t.Fatalf("echo %q (%s)", got, r.Seqs[0].Finish)
	}
	r = generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"say it back"}],"max_tokens":1}`)
	if len(r.Seqs[0].Tokens) != 3 || r.Seqs[0].Finish != FinishStop {
		t.Fatalf("echo with max_tokens 1: %q (%s), want the whole turn with finish stop", r.Seqs[0].Tokens, r.Seqs[0].Finish)
	}
}

// TestToolCallsFitTheirSchemaAndMaxTokens: a required tool call has arguments of its
// schema's shape, its tokens are the arguments, and a small max_tokens cuts them with
// finish "length".
func TestToolCallsFitTheirSchemaAndMaxTokens(t *testing.T) {
	g, _ := testGenerator(t)
	tools := `"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":3}},"required":["city","days"]}}}],"tool_choice":"required"`
	r := generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tools+`}`)
	s := r.Seqs[0]
	if s.Finish != FinishToolCalls || len(s.ToolCalls) == 0 || s.ToolCalls[0].Name != "weather" {
		t.Fatalf("finish %q calls %+v", s.Finish, s.ToolCalls)
	}
	if args := s.ToolCalls[0].Args; !strings.HasPrefix(args, `{"city":"`) || !strings.Contains(args, `"days":`) {
		t.Fatalf("arguments %s do not follow the schema", args)
	}
	if len(s.ToolOfToken) != len(s.Tokens) {
		t.Fatalf("%d tokens, %d tool indexes", len(s.Tokens), len(s.ToolOfToken))
	}
	cut := generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2,`+tools+`}`)
	if c := cut.Seqs[0]; len(c.Tokens) != 2 || c.Finish != FinishLength {
		t.Fatalf("max_tokens 2: %d tokens, finish %q", len(c.Tokens), c.Finish)
	}
}

// TestScheduleAndTheStreamCursor: Schedule puts the first token at admission + TTFT and the
// end after every gap; when the first token goes out late, the next deadlines count from
// when it was sent (no burst), and Close marks the finish.
func TestScheduleAndTheStreamCursor(t *testing.T) {
	g, cfg := testGenerator(t, "--time-to-first-token", "10ms", "--inter-token-latency", "2ms")
	calc, err := latency.New(cfg.LatencyCalculator, cfg.Latency)
	if err != nil {
		t.Fatal(err)
	}
	r := generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true}`)
	r.Admission.Admitted = time.Second
	if e := g.Schedule(r, calc); e != nil {
		t.Fatal(e)
	}
	s := &r.Seqs[0]
	if s.Deadline != time.Second+10*time.Millisecond || s.End != s.Deadline+6*time.Millisecond || r.End() != s.End {
		t.Fatalf("deadline %v end %v", s.Deadline, s.End)
	}
	late := s.Deadline + 50*time.Millisecond
	if !s.Due(late) || !s.TokenPending() {
		t.Fatal("the first token is not due")
	}
	if _, first := s.Sending(late); !first {
		t.Fatal("the first token is not reported first")
	}
	s.Sent()
	if next, _ := r.NextDeadline(); next != late+2*time.Millisecond {
		t.Fatalf("second token due %v, want the first token sent + 2ms (%v)", next, late+2*time.Millisecond)
	}
	for s.TokenPending() {
		now := s.Deadline
		if gap, _ := s.Sending(now); s.Next > 0 && gap != 2*time.Millisecond {
			t.Fatalf("gap %v", gap)
		}
		s.Sent()
	}
	s.Close(s.Deadline)
	if _, ok := r.NextDeadline(); ok || s.FirstAt != late {
		t.Fatalf("after Close: pending %v, first at %v", ok, s.FirstAt)
	}
}

// TestResetKeepsBuffersNotState: a reused Request starts empty but keeps its storage.
func TestResetKeepsBuffersNotState(t *testing.T) {
	g, _ := testGenerator(t)
	r := generated(t, g, Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"ignore_eos":true}`)
	r.ID = append(r.ID, "chatcmpl-x"...)
	r.Reset()
	if len(r.Seqs) != 0 || len(r.ID) != 0 || r.Params != (Params{}) || r.Prompt.Tokens != 0 || len(r.Wire.Chat.Messages) != 0 {
		t.Fatalf("state survived Reset: %+v", r)
	}
	if cap(r.Seqs) == 0 || cap(r.tokens) == 0 || cap(r.Prompt.Flat) == 0 {
		t.Fatal("Reset dropped the small buffers")
	}
}

// TestRequestIDsAndLogprobsAreDeterministic: the id is a UUID of seed, port and counter;
// logprobs fall with the alternative's rank.
func TestRequestIDsAndLogprobsAreDeterministic(t *testing.T) {
	a, b := AppendRequestID(nil, 1, 8000, 7), AppendRequestID(nil, 1, 8000, 7)
	if string(a) != string(b) || len(a) != 36 || a[14] != '5' || string(a) == string(AppendRequestID(nil, 1, 8000, 8)) {
		t.Fatalf("ids %s %s", a, b)
	}
	if Logprob("x", 0) <= Logprob("x", 1) || Alternative("x", 0) != "x" || Alternative("x", 1) == "" {
		t.Fatal("logprobs or alternatives")
	}
}
