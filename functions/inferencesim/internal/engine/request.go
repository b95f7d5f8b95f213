package engine

import (
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// Kind is what a request asks for: a chat completion (chat completions and the Responses
// API) or a text completion.
type Kind int

const (
	Chat Kind = iota
	Text
)

// Request is one generation request from decoding to its last token, in parts each read by
// one stage: the wire body, the model it names, its parameters and tools (Generator.Check),
// the prompt, its passage through admission, and the sequences generated and scheduled for
// it. It is reused across requests (Reset keeps its buffers).
type Request struct {
	Kind Kind
	Wire openai.Body

	Model string // the model name echoed in responses
	LoRA  string // the adapter the request runs on, "" for the base model

	ID      []byte // the response id, reproducible with --seed (AppendRequestID)
	Created int64  // Unix seconds
	RNG     textgen.RNG

	Params    Params
	Tools     Tools
	Prompt    Prompt
	Admission Admission

	Seqs   []Sequence
	tokens []string // every sequence's tokens, back to back
}

// Admission is the request's passage through the scheduler, in monotonic offsets (pacer.Now).
type Admission struct {
	Arrival  time.Duration
	Admitted time.Duration
	Queued   bool // it waited in the queue
	Running  int  // requests running when it was admitted, itself included
	Acquired bool // it holds a running slot
}

// keepBytes bounds the buffers a reused Request keeps: one huge request must not pin large
// buffers in a pool.
const keepBytes = 64 << 10

// Reset readies r for the next request, keeping its storage (within keepBytes).
func (r *Request) Reset() {
	r.Wire.Reset(keepBytes)
	for i := range r.Seqs {
		r.Seqs[i] = Sequence{Timeline: Timeline{Gaps: r.Seqs[i].Gaps[:0]}}
	}
	clear(r.tokens)
	tokens := r.tokens[:0]
	if cap(tokens) > keepBytes/16 {
		tokens = nil
	}
	*r = Request{Wire: r.Wire, ID: r.ID[:0], Seqs: r.Seqs[:0], tokens: tokens, Prompt: r.Prompt.reset()}
}

// CompletionTokens is the number of tokens generated over every sequence.
func (r *Request) CompletionTokens() int {
	n := 0
	for i := range r.Seqs {
		n += len(r.Seqs[i].Tokens)
	}
	return n
}

// End is when the last token of any sequence is due (a non-streamed answer waits for it).
func (r *Request) End() time.Duration {
	end := r.Admission.Admitted
	for i := range r.Seqs {
		end = max(end, r.Seqs[i].End)
	}
	return end
}

// NextDeadline is the earliest pending event of any sequence still streaming, false when
// every sequence has finished.
func (r *Request) NextDeadline() (time.Duration, bool) {
	var best time.Duration
	found := false
	for i := range r.Seqs {
		s := &r.Seqs[i]
		if s.Finished {
			continue
		}
		if !found || s.Deadline < best {
			best, found = s.Deadline, true
		}
	}
	return best, found
}
