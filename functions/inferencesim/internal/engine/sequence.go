package engine

import (
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
)

// Finish reasons.
const (
	FinishStop           = metrics.FinishStop
	FinishLength         = metrics.FinishLength
	FinishToolCalls      = "tool_calls"
	FinishRemoteDecode   = "remote_decode"
	FinishCacheThreshold = "cache_threshold"
)

// Sequence is one generated sequence (an OpenAI choice) of a request: what it says, when
// each token is due, and where its stream stands.
type Sequence struct {
	Index        int
	Tokens       []string
	Finish       string
	PromptTokens int
	MaxTokens    int    // the most it could have generated
	PromptText   string // text completions with echo: the prompt, answered first
	ToolCalls    []ToolCall
	ToolOfToken  []int // a tool-calling sequence: the call each token belongs to

	Timeline
	Cursor
}

// Timeline is a sequence's schedule, from the latency calculator (Generator.Schedule), in
// monotonic offsets.
type Timeline struct {
	TTFT time.Duration
	Gaps []time.Duration // before each token after the first
	End  time.Duration   // when the last token is due
}

// Cursor is where a streamed sequence stands: the next token, when it is due, and when the
// first and the last token went out.
type Cursor struct {
	Next       int
	Deadline   time.Duration // when token Next (or the finish) is due
	FirstAt    time.Duration
	LastAt     time.Duration
	RoleSent   bool // chat: the assistant-role chunk went out
	Finished   bool
	TextOffset int // text completions: the answer's length so far (logprobs' text_offset)
}

// Due reports whether the sequence's next event is due at now.
func (s *Sequence) Due(now time.Duration) bool { return !s.Finished && s.Deadline <= now }

// TokenPending reports whether a token is still to be sent (else the finish is).
func (s *Sequence) TokenPending() bool { return s.Next < len(s.Tokens) }

// Sending records that token Next goes out at now and returns the gap since the token
// before it (first: there is none). The gaps are anchored at the first token actually sent:
// when it is late (queueing, CPU contention) the rest keep their spacing instead of being
// already due and leaving in one burst. Each later deadline is still absolute (anchor + sum
// of gaps), so error never accumulates, and the lateness stays in the TTFT, where vLLM
// shows it too.
func (s *Sequence) Sending(now time.Duration) (gap time.Duration, first bool) {
	if s.Next == 0 {
		s.FirstAt, s.Deadline = now, now
		first = true
	} else {
		gap = now - s.LastAt
	}
	s.LastAt = now
	return gap, first
}

// Sent moves past token Next once it is written: its deadline becomes the next token's.
func (s *Sequence) Sent() {
	s.TextOffset += len(s.Tokens[s.Next])
	if s.Next < len(s.Gaps) {
		s.Deadline += s.Gaps[s.Next]
	}
	s.Next++
}

// Close marks the sequence finished at now (a sequence without tokens starts and ends then).
func (s *Sequence) Close(now time.Duration) {
	if s.Next == 0 {
		s.FirstAt, s.LastAt = now, now
	}
	s.Finished = true
}
