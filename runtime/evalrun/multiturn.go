package evalrun

import (
	"fmt"
	"math"

	"github.com/lensfn/lensfn/events"
)

// Limits of a multi-turn shared-prefix workload (enable_multi_turn_chat). Each user's session
// carries its whole conversation in every turn, and the runner keeps every live session's
// history until its last turn, so the turns a session gets and the context all sessions hold
// at once are bounded as well as the per-request lengths.
const (
	// MaxSessionTurns bounds the turns one session gets.
	MaxSessionTurns = 1000
	// MaxMultiTurnHeldTokens bounds the conversation tokens the sessions of one worker hold at
	// their longest (sessions x the last turn's context): ~16M tokens is ~100 MB of text.
	MaxMultiTurnHeldTokens = 16 << 20
)

// MultiTurn is how a multi-turn shared-prefix workload lays out its conversations, following
// inference-perf's shared_prefix generator with enable_multi_turn_chat: there is one session
// per (group, prompt) pair, request k of the rate stages' Poisson clock is turn k / Sessions of
// session k mod Sessions, and every turn sends the session's conversation so far (the group's
// system prompt, the earlier questions and the model's replies) and a new question.
type MultiTurn struct {
	Sessions int
	// ExpectedRequests is sum(int(rate * duration)) over the stages (the Poisson count's mean).
	ExpectedRequests int
	// Turns is the turns a session gets for the expected count, rounded up.
	Turns int
	// LastContextTokens is the prompt of a session's last turn: system prompt + Turns
	// questions + (Turns - 1) replies of output_len tokens.
	LastContextTokens int
}

// PlanMultiTurn is sp's conversation layout (sp's lengths and stages already in range).
func PlanMultiTurn(sp *events.SharedPrefix) MultiTurn {
	m := MultiTurn{Sessions: sp.NumGroups * sp.NumPromptsPerGroup}
	for _, st := range sp.Stages {
		m.ExpectedRequests += int(st.Rate * st.Duration)
	}
	if m.Sessions <= 0 {
		return m
	}
	m.Turns = int(math.Ceil(float64(m.ExpectedRequests) / float64(m.Sessions)))
	if m.Turns > 0 {
		m.LastContextTokens = sp.SystemPromptLen + m.Turns*sp.QuestionLen + (m.Turns-1)*sp.OutputLen
	}
	return m
}

// multiTurnOn says whether sp asks for multi-turn chat.
func multiTurnOn(sp *events.SharedPrefix) bool {
	return sp != nil && sp.EnableMultiTurnChat != nil && *sp.EnableMultiTurnChat
}

// checkMultiTurn adds the bounds of a multi-turn layout, naming stagesLoc (the stages decide
// the turns) or lengthsLoc (the lengths decide the context).
func checkMultiTurn(sp *events.SharedPrefix, add func(msg string, loc []string), stagesLoc, lengthsLoc []string) {
	m := PlanMultiTurn(sp)
	if m.Turns > MaxSessionTurns {
		add(fmt.Sprintf("with enable_multi_turn_chat each of the %d sessions (num_groups x num_prompts_per_group) gets about %d turns "+
			"(sum of rate x duration = %d requests, one turn each in turn); at most %d turns per session: raise the sessions or shorten the stages",
			m.Sessions, m.Turns, m.ExpectedRequests, MaxSessionTurns), stagesLoc)
		return
	}
	if m.LastContextTokens > MaxInputTokens {
		add(fmt.Sprintf("with enable_multi_turn_chat a session's last turn (turn %d) sends system_prompt_len + %d questions + %d replies = %d tokens; at most %d",
			m.Turns, m.Turns, m.Turns-1, m.LastContextTokens, MaxInputTokens), lengthsLoc)
		return
	}
	if held := int64(min(m.Sessions, m.ExpectedRequests)) * int64(m.LastContextTokens); held > MaxMultiTurnHeldTokens {
		add(fmt.Sprintf("with enable_multi_turn_chat the %d live sessions would hold up to %d conversation tokens at once; at most %d: use fewer sessions or shorter turns",
			min(m.Sessions, m.ExpectedRequests), held, MaxMultiTurnHeldTokens), lengthsLoc)
	}
}
