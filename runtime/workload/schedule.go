package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// Schedules build each request when the engine loads it, so a stage of a million requests costs
// the runner a few bytes per request (arrival offsets), never the prompts.

// Fixed is n requests of fixed input and output lengths (a matrix point's closed loop).
type Fixed struct {
	N, ISL, OSL int
	Meta        map[string]any
}

func (s Fixed) Len() int { return s.N }

func (s Fixed) Load(i int, r *loadgen.Request) error {
	*r = loadgen.Request{InputTokens: s.ISL, OutputTokens: s.OSL, Metadata: s.Meta}
	return nil
}

// RateStages lays rate stages end to end on one absolute clock: each stage is a Poisson
// process (exponential gaps drawn from rng) at its rate for its duration. It returns every
// send offset (ms) and the stage each belongs to.
func RateStages(rng *rand.Rand, stages []events.RateStage) (arrivals []float64, stage []uint8) {
	start := 0.0
	for k, st := range stages {
		for t := rng.ExpFloat64() / st.Rate; t < st.Duration; t += rng.ExpFloat64() / st.Rate {
			arrivals = append(arrivals, start+t*1000)
			stage = append(stage, uint8(k))
		}
		start += st.Duration * 1000
	}
	return arrivals, stage
}

// SharedPrefix is a shared-prefix workload's rate stages, as inference-perf's shared_prefix
// generator lays them out: num_groups x num_prompts_per_group prompts, each its group's system
// prompt followed by the prompt's own question, and request k sends prompt (k mod num_groups,
// k / num_groups mod num_prompts_per_group), so every prompt repeats whole once per cycle. The
// system prompt is one hash block (its length the system prompt's) and the question a tail
// keyed by its (group, prompt), so every request of a group shares the system prompt byte for
// byte, repeats of a prompt share all of it, and the server's prefix cache can reuse both. On the chat API the system
// prompt is the request's system message and the question its user message.
//
// With enable_multi_turn_chat the requests are turns of conversations instead, laid out as
// inference-perf's generator does (evalrun.PlanMultiTurn): one session per (group, prompt),
// request k is turn k / sessions of session k mod sessions, so consecutive arrivals go to
// different users and every group's users take turns. A turn is released at its arrival on
// the Poisson clock or when the session's previous turn completes, whichever is later. The
// first turn sends the group's system prompt and a question; each later turn a fresh question,
// which the engine sends after the conversation so far, the model's replies included
// (loadgen's KeepReplies), so the prefix the server can reuse grows turn by turn.
type SharedPrefix struct {
	sp        *events.SharedPrefix
	arrivals  []float64 // ms from the invocation's start
	stage     []uint8   // stage index per request
	seed      int64
	multiTurn bool
	sessions  int
}

func NewSharedPrefix(sp *events.SharedPrefix, seed uint64) *SharedPrefix {
	s := &SharedPrefix{sp: sp, seed: int64(seed & math.MaxInt32),
		multiTurn: sp.EnableMultiTurnChat != nil && *sp.EnableMultiTurnChat, sessions: sp.NumGroups * sp.NumPromptsPerGroup}
	s.arrivals, s.stage = RateStages(rand.New(rand.NewPCG(seed, 0x5eed)), sp.Stages)
	return s
}

func (s *SharedPrefix) Len() int { return len(s.arrivals) }

func (s *SharedPrefix) Load(i int, r *loadgen.Request) error {
	at := s.arrivals[i]
	group := int64(i % s.sp.NumGroups)
	prompt := int64(i/s.sp.NumGroups) % int64(s.sp.NumPromptsPerGroup)
	turn := 0
	if s.multiTurn {
		user := i % s.sessions
		group, prompt, turn = int64(user%s.sp.NumGroups), int64(user/s.sp.NumGroups), i/s.sessions
	}
	*r = loadgen.Request{ArrivalMs: &at, InputTokens: s.sp.SystemPromptLen + s.sp.QuestionLen, OutputTokens: s.sp.OutputLen,
		Metadata: map[string]any{"stage": int(s.stage[i]), "group": group, "prompt": prompt}}
	if s.multiTurn {
		r.SessionID, r.Turn = fmt.Sprintf("g%d-p%d", group, prompt), turn
		r.ContextMode, r.KeepReplies = loadgen.ContextDeltas, true
		if turn > 0 { // the system prompt went with the first turn and stays in the history
			r.InputTokens = s.sp.QuestionLen
			return nil
		}
	}
	if s.sp.SystemPromptLen > 0 {
		// One block: the group's system prompt; the engine extends it with the question.
		r.HashIDs = []int64{s.seed<<20 | group}
		r.BlockSize = s.sp.SystemPromptLen
		// On chat it travels as the system message, as inference-perf sends it.
		r.SystemPromptTokens = s.sp.SystemPromptLen
	}
	// The question is the (group, prompt)'s own, the same text every time the prompt repeats.
	r.TailKey = QuestionKey(s.seed, group, prompt, s.sp.NumPromptsPerGroup)
	return nil
}

// QuestionKey is the word stream of a shared-prefix prompt's question (loadgen's TailKey):
// one per (seed, group, prompt), never 0.
func QuestionKey(seed, group, prompt int64, promptsPerGroup int) uint64 {
	return uint64(seed)<<32 | uint64(group*int64(promptsPerGroup)+prompt+1)
}

// Stage is request i's rate stage.
func (s *SharedPrefix) Stage(i int) int { return int(s.stage[i]) }

// ArrivalMs is request i's send offset from the invocation's start.
func (s *SharedPrefix) ArrivalMs(i int) float64 { return s.arrivals[i] }

// Named is a named workload's open-loop stages: Poisson arrivals, lengths drawn from
// the workload's clipped normal distributions (deterministic per request index).
type Named struct {
	w        evalrun.Workload
	arrivals []float64
	stage    []uint8
	seed     uint64
}

func NewNamed(w evalrun.Workload, seed uint64) *Named {
	s := &Named{w: w, seed: seed}
	s.arrivals, s.stage = RateStages(rand.New(rand.NewPCG(seed, 0x11a3ed)), w.Stages)
	return s
}

func (s *Named) Len() int { return len(s.arrivals) }

func (s *Named) Load(i int, r *loadgen.Request) error {
	at := s.arrivals[i]
	rng := rand.New(rand.NewPCG(s.seed, uint64(i)))
	*r = loadgen.Request{ArrivalMs: &at, InputTokens: draw(rng, s.w.Input), OutputTokens: draw(rng, s.w.Output),
		Metadata: map[string]any{"stage": int(s.stage[i])}}
	return nil
}

// Lengths is n closed-loop requests with lengths drawn from distributions.
type Lengths struct {
	N           int
	In, Out     evalrun.Distribution
	Seed, Stage uint64
}

func (s Lengths) Len() int { return s.N }

func (s Lengths) Load(i int, r *loadgen.Request) error {
	rng := rand.New(rand.NewPCG(s.Seed^s.Stage<<40, uint64(i)))
	*r = loadgen.Request{InputTokens: draw(rng, s.In), OutputTokens: draw(rng, s.Out), Metadata: map[string]any{"stage": int(s.Stage)}}
	return nil
}

// draw samples a length from a normal distribution clipped to [min, max].
func draw(rng *rand.Rand, d evalrun.Distribution) int {
	if d.StdDev == 0 {
		return d.Mean
	}
	v := int(math.Round(float64(d.Mean) + rng.NormFloat64()*float64(d.StdDev)))
	return min(max(v, d.Min), d.Max)
}
