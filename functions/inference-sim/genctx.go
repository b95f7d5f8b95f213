package inferencesim

import (
	"sync"
	"time"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

const (
	kindChat = iota
	kindText
)

// Wire formats: chat and text completions, and the Responses API, which
// is processed as a chat request and only rendered differently.
const (
	apiCompletions = iota
	apiResponses
)

// choice is one generated sequence of a request.
type choice struct {
	index        int
	tokens       []string
	finish       string
	promptText   string // completions echo
	toolCalls    []toolCall
	toolOfToken  []int // streamed tool calls: tool-call index of each token
	ttft         time.Duration
	gaps         []time.Duration
	end          time.Duration // when the last token is due (monotonic offset)
	promptTokens int

	// streaming cursor
	next       int           // next token to emit
	deadline   time.Duration // when token `next` (or the finish) is due
	firstAt    time.Duration
	lastAt     time.Duration
	roleSent   bool
	finished   bool
	textOffset int
	maxTokens  int
}

func (c *choice) completionTokens() int { return len(c.tokens) }

// genCtx carries one generation request from parsing to the last byte. It
// is pooled; a streamed request returns it to the pool in Close. Its state
// is in parts, each read by one stage: the decoded request (the wire
// structs and the parameters taken from them), the prompt, the admission,
// the sequences (choices) and the stream being written.
type genCtx struct {
	r     *rank
	kind  int
	api   int
	seqNo int // Responses API event sequence number
	chat  openai.ChatRequest
	text  openai.CompletionRequest
	mm    *metrics.Model

	requestParams
	promptState
	admissionState
	fastDecoded

	choices []choice
	tokBuf  []string

	watch clientWatch // notices a client that left (clientwatch.go)

	streamState
}

// requestParams are the request's parameters once decoded and checked
// (readParams): what to generate and how to answer.
type requestParams struct {
	model         string // model name echoed in responses
	lora          string
	stream        bool
	includeUsage  bool
	maxTokens     int
	maxTokensSet  bool
	n             int
	ignoreEOS     bool
	remoteDecode  bool
	remotePrefill bool
	logprobs      bool
	topLogprobs   int
	echoPrompt    bool
	tools         []openai.ToolDef
	toolSchemas   []any // decoded parameters of each tool
	toolChoice    openai.ToolChoice
}

// promptState is the tokenized prompt and what the prefix KV cache made of
// it (tokenizePrompt, kvStart), with the scratch buffers kept across
// requests.
type promptState struct {
	promptTokens int
	cachedTokens int
	cacheMiss    bool // prefix-cache hit rate below the threshold
	prompts      []openai.Prompt
	promptStore  [1]openai.Prompt
	promptBuf    []byte
	tokScratch   []string
	idScratch    []uint32
	kvBlocks     []uint64
}

// admissionState is the request's identity and its passage through the
// scheduler: arrival, admission (monotonic offsets) and the slot it holds.
type admissionState struct {
	id       []byte
	created  int64
	counter  uint64
	rng      textgen.RNG
	arrival  time.Duration
	admitted time.Duration
	queued   bool
	running  int
	acquired bool
}

// fastDecoded holds what the fast-path decoder (fastjson.go) read, with the
// private copy of the body its strings point into.
type fastDecoded struct {
	bodyCopy          []byte
	fastMaxTokens     int64
	fastMaxCompletion int64
	fastN             int64
	fastTemperature   float64
	fastTopP          float64
	fastStreamOptions openai.StreamOptions
}

// streamState is the stream being written: the rendered frames not yet
// read by fasthttp and where the stream stands.
type streamState struct {
	out      []byte
	outOff   int
	started  bool
	done     bool
	complete bool
}

var genPool = sync.Pool{New: func() any { return &genCtx{} }}

func (r *rank) getGen(kind int) *genCtx {
	g := genPool.Get().(*genCtx)
	g.r, g.kind = r, kind
	return g
}

// resetRequest clears the decoded request, keeping the messages' storage.
func (g *genCtx) resetRequest() {
	msgs := g.chat.Messages[:cap(g.chat.Messages)]
	clear(msgs)
	g.chat = openai.ChatRequest{Messages: msgs[:0]}
	g.text = openai.CompletionRequest{}
	g.fastStreamOptions = openai.StreamOptions{}
}

func (g *genCtx) reset() {
	g.resetRequest()
	for i := range g.choices {
		gaps := g.choices[i].gaps[:0]
		g.choices[i] = choice{gaps: gaps}
	}
	clear(g.tokBuf)
	clear(g.tokScratch)
	*g = genCtx{
		chat: g.chat, choices: g.choices[:0], tokBuf: g.tokBuf[:0],
		promptState:    promptState{promptBuf: g.promptBuf[:0], tokScratch: g.tokScratch[:0], idScratch: g.idScratch[:0], kvBlocks: g.kvBlocks[:0]},
		admissionState: admissionState{id: g.id[:0]},
		streamState:    streamState{out: g.out[:0]},
		fastDecoded:    fastDecoded{bodyCopy: g.bodyCopy[:0]},
	}
}

func (g *genCtx) release() {
	g.watch.stop()
	g.reset()
	// Do not let one huge request pin large buffers in the pool.
	const keep = 64 << 10
	if cap(g.out) > keep {
		g.out = nil
	}
	if cap(g.bodyCopy) > keep {
		g.bodyCopy = nil
	}
	if cap(g.promptBuf) > keep {
		g.promptBuf = nil
	}
	if cap(g.tokBuf) > keep/16 {
		g.tokBuf = nil
	}
	genPool.Put(g)
}
